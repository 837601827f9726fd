package sim

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A preset with open findings runs when named, never in all (the tests and make chaos would
// fail on it every time), and every open schedule names a preset simulate knows.
func TestOpenTopologiesRunOnlyWhenNamed(t *testing.T) {
	for name := range OpenTopologies {
		if _, err := LookupTopology(name); err != nil {
			t.Errorf("open preset %s: %v", name, err)
		}
		if slices.Contains(TopologyNames(), name) {
			t.Errorf("open preset %s is in all", name)
		}
	}
	files, err := filepath.Glob("testdata/open/*.sched")
	if err != nil || len(files) == 0 {
		t.Fatalf("no open schedules (%v)", err)
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		topo, _, err := ReadSchedule(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if _, err := LookupTopology(topo); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}
