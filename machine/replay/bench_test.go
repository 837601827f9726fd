package replay_test

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// benchEvents is the journal size of the goal, and goalEventsPerSecond its figure.
const (
	benchEvents         = 10000
	goalEventsPerSecond = 100_000
)

var (
	benchOnce    sync.Once
	benchJournal replay.Journal
	benchFile    []byte
	sinkReport   replay.Report
	sinkDecision machine.Decision
)

// longJournal is the first benchEvents records of one long simulated run with faults and user
// actions but no re-creation (the prefix of a journal is a journal): transitions of every kind the run took and the
// observations between them, repeats included, as the operator journals them.
func longJournal(b *testing.B) (replay.Journal, []byte) {
	benchOnce.Do(func() {
		topo := sim.Topologies["replication-persistent"]
		s := sim.New(topo, sim.Options{Journal: true})
		src := sim.RandSource{R: rand.New(rand.NewSource(7))}
		for len(s.Records().Records) < benchEvents {
			st := sim.GenStep(src, topo)
			if st.Kind == sim.StepUser && st.User.Kind == sim.UserRecreate {
				// A re-created cluster starts a journal of its own.
				continue
			}
			s.Step(st)
		}
		benchJournal = s.Records()
		benchJournal.Records = benchJournal.Records[:benchEvents]
		var err error
		if benchFile, err = json.Marshal(benchJournal); err != nil {
			b.Fatal(err)
		}
	})
	return benchJournal, benchFile
}

// BenchmarkReplay replays a 10,000-event journal (issue 16's goal: at least 100k events/s)
// and reports events per second and the ratio to the goal; as the reference measured in the
// same run, the bare Decide calls a replay cannot do without (the same decisions, nothing
// compared or reported): replay/decide is what the replay adds. events/s-with-read includes
// reading the exported file (JSON), which dominates.
func BenchmarkReplay(b *testing.B) {
	j, file := longJournal(b)
	rep := replay.Replay(j, nil)
	if rep.Differed != 0 || rep.NotReplayable != 0 || len(rep.Steps) != benchEvents {
		b.Fatalf("the bench journal does not replay the same: %d differed, %d not replayable", rep.Differed, rep.NotReplayable)
	}
	// The reference: the same decisions, bare.
	type input struct {
		p   machine.Persisted
		obs machine.Observation
	}
	var inputs []input
	state := machine.Persisted{State: machine.Bootstrapping}
	var last machine.Observation
	for _, r := range j.Records {
		switch r.Kind {
		case replay.KindTransition:
			inputs = append(inputs, input{state, *r.Entry.Observed})
			last, state = *r.Entry.Observed, r.Entry.After
		case replay.KindObservation:
			if r.Observed.Observation != nil {
				last = *r.Observed.Observation
			}
			obs := last
			obs.Time = r.Observed.Time
			inputs = append(inputs, input{state, obs})
		}
	}
	var replayed, decided, read time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		sinkReport = replay.Replay(j, nil)
		replayed += time.Since(start)
		start = time.Now()
		for _, in := range inputs {
			sinkDecision = machine.Decide(in.p, in.obs)
		}
		decided += time.Since(start)
		start = time.Now()
		back, err := replay.Read(bytes.NewReader(file))
		if err != nil {
			b.Fatal(err)
		}
		sinkReport = replay.Replay(back, nil)
		read += time.Since(start)
	}
	perEvent := float64(replayed.Nanoseconds()) / float64(b.N*benchEvents)
	ref := float64(decided.Nanoseconds()) / float64(b.N*len(inputs))
	b.ReportMetric(perEvent, "ns/op")
	b.ReportMetric(perEvent, "ns/event")
	b.ReportMetric(1e9/perEvent, "events/s")
	b.ReportMetric(1e9/perEvent/goalEventsPerSecond, "x-goal(100k/s)")
	b.ReportMetric(ref, "ns/decide(ref)")
	b.ReportMetric(perEvent/ref, "replay/decide")
	b.ReportMetric(1e9*float64(b.N*benchEvents)/float64(read.Nanoseconds()), "events/s-with-read")
}
