package sim

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Schedules that once violated a property, shrunk and kept under testdata/regressions (the
// seeded explorer's counterpart of rapid's testdata/rapid). They are replayed against
// today's world and machine: the world model has been refined since some were found, so a
// file is a scenario that once failed, not a guaranteed reproduction of the old failure.
func TestRegressionSchedules(t *testing.T) {
	files, err := filepath.Glob("testdata/regressions/*.sched")
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression schedules (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".sched"), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res := runSchedule(t, f)
			if len(res.Violations) > 0 {
				t.Fatalf("%v\n%s", res.Violations, strings.Join(res.Trace, "\n"))
			}
		})
	}
}

// runSchedule reads a schedule (a "# topology:" line, then one step per line) and runs it
// with its history traced.
func runSchedule(t *testing.T, r io.Reader) Result {
	t.Helper()
	topo, steps, err := ReadSchedule(r)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := LookupTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	return Run(tp, steps, Options{Trace: true})
}

// Every step the generator draws prints as a line ParseStep reads back exactly, the open
// presets' too.
func TestStepsReadBackAsPrinted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		topo, err := LookupTopology(rapid.SampledFrom(knownTopologyNames()).Draw(rt, "topology"))
		if err != nil {
			rt.Fatal(err)
		}
		st := GenStep(rapidSource{rt}, topo)
		got, err := ParseStep(st.String())
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) {
			rt.Fatalf("%q read back as %+v, was %+v", st.String(), got, st)
		}
	})
}

func TestReadScheduleRejectsNonsense(t *testing.T) {
	for _, text := range []string{"fault: teleport s0-1", "write key x", "user: dance", "fault: pause s0-1 ticks"} {
		if _, _, err := ReadSchedule(strings.NewReader(text)); err == nil {
			t.Errorf("%q was accepted", text)
		}
	}
}
