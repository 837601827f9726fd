package version

import "testing"

// What --version prints after the program's name; a commit the build could not tell is said
// to be unknown rather than left blank.
func TestString(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "v0.3.0", "abc1234"
	if got := String(); got != "v0.3.0 (commit abc1234)" {
		t.Errorf("String() = %q", got)
	}
	Commit = ""
	if got := String(); got != "v0.3.0 (commit unknown)" {
		t.Errorf("String() without a commit = %q", got)
	}
	if got := LDFlags("v1", "c"); got != "-X github.com/valkey-fsm/valkey-operator/internal/version.Version=v1 -X github.com/valkey-fsm/valkey-operator/internal/version.Commit=c" {
		t.Errorf("LDFlags = %q", got)
	}
}
