package localcluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolveInRootKeepsAbsoluteLinksInsideTheRoot(t *testing.T) {
	// A link with an absolute target, like Debian's /var/run -> /run, in a scratch directory
	// under the real root (the function resolves against the host's files).
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "abs")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "rel")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		filepath.Join(dir, "abs", "secrets", "x"): filepath.Join(dir, "real", "secrets", "x"),
		filepath.Join(dir, "rel", "a"):            filepath.Join(dir, "real", "a"),
		filepath.Join(dir, "real", "..", "rel"):   filepath.Join(dir, "real"),
		"/no/such/path":                           "/no/such/path",
	} {
		got, err := resolveInRoot(in)
		if err != nil || got != want {
			t.Errorf("resolveInRoot(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
