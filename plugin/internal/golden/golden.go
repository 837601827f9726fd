package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is registered in every test binary that imports this package, so that
// `go test ./plugin/... -update` rewrites the golden files of every verb.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// Assert fails the test when got differs from testdata/<name>, or writes got there under
// -update. The message shows both, since golden outputs are short tables people read.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run the test with -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (run with -update if the change is intended)\n--- got ---\n%s--- want ---\n%s", path, got, want)
	}
}
