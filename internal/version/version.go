package version

import (
	"fmt"
	"runtime/debug"
)

// Set with -ldflags -X; see the package comment. They are variables, not constants, because
// the linker can only set variables.
var (
	// Version is the release (git describe --tags), "dev" when not stamped.
	Version = "dev"
	// Commit is the source revision, from the build's VCS stamp when not set by the linker.
	Commit = ""
)

// shortCommit is how many hex digits of a revision are shown, as git's short form does.
const shortCommit = 7

func init() {
	if Commit != "" {
		return
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			Commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(Commit) > shortCommit {
		Commit = Commit[:shortCommit]
	}
	// A build from a tree with uncommitted changes is not the commit it names.
	if Commit != "" && modified {
		Commit += "-dirty"
	}
}

// String is what `--version` prints after the program's name: "v0.3.0 (commit abc1234)".
func String() string {
	c := Commit
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("%s (commit %s)", Version, c)
}

// LDFlags are the -X flags that stamp version and commit into a binary of this module.
func LDFlags(version, commit string) string {
	const pkg = "github.com/valkey-fsm/valkey-operator/internal/version"
	return fmt.Sprintf("-X %s.Version=%s -X %s.Commit=%s", pkg, version, pkg, commit)
}
