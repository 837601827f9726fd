package replay_test

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// exported writes a journal as the journal endpoint serves it, in pages of size records
// (pages concatenated, as `kubectl get --raw` appended to one file gives them), and reads it
// back as the replay command does.
func exported(t *testing.T, j replay.Journal, size int) replay.Journal {
	t.Helper()
	var buf bytes.Buffer
	for from := 0; from < len(j.Records) || from == 0; from += size {
		to := min(from+size, len(j.Records))
		page := map[string]any{"kind": "JournalPage", "apiVersion": "journal.valkey.fsm.dev/v1alpha1", "cluster": j.Cluster, "records": j.Records[from:to]}
		if err := json.NewEncoder(&buf).Encode(page); err != nil {
			t.Fatal(err)
		}
		if to == len(j.Records) {
			break
		}
	}
	back, err := replay.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// simulated runs a random schedule with the journal kept and returns the journal.
func simulated(topo sim.Topology, seed int64, steps int) (replay.Journal, []sim.Violation) {
	s := sim.New(topo, sim.Options{Journal: true})
	for _, st := range sim.Generate(sim.RandSource{R: rand.New(rand.NewSource(seed))}, topo, steps) {
		s.Step(st)
	}
	s.Converge()
	return s.Records(), s.Violations()
}

// TestReplayOfChaosJournalsIsTheSame replays the journals the chaos simulator's operator
// writes (random fault schedules on every topology: failovers, restarts, partitions, clock
// skew between operator incarnations, rotations, reshards): every decision, transitions and
// observations that caused none, is taken again the same, the persisted state each transition
// wrote included.
func TestReplayOfChaosJournalsIsTheSame(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	var transitions, observations, repeats int
	edges := map[string]bool{}
	for _, name := range sim.TopologyNames() {
		for seed := int64(1); seed <= int64(seeds); seed++ {
			j, violations := simulated(sim.Topologies[name], seed, 150)
			if len(violations) > 0 {
				t.Fatalf("%s seed %d: the simulation itself failed: %v", name, seed, violations)
			}
			j = exported(t, j, 97)
			rep := replay.Replay(j, nil)
			if rep.Differed != 0 || rep.NotReplayable != 0 || rep.Same != len(j.Records) {
				var out bytes.Buffer
				_ = rep.Write(&out, false)
				t.Fatalf("%s seed %d: %d same, %d differed, %d not replayable of %d records:\n%s", name, seed, rep.Same, rep.Differed, rep.NotReplayable, len(j.Records), out.String())
			}
			for _, r := range j.Records {
				switch r.Kind {
				case replay.KindTransition:
					transitions++
					edges[string(r.Entry.From)+" "+string(r.Entry.Event)] = true
				case replay.KindObservation:
					observations++
					if r.Observed.Observation == nil {
						repeats++
					}
				}
			}
		}
	}
	// The replays must have covered something: failovers among the transitions, and
	// observations both whole and repeated.
	if transitions < 50 || observations < 500 || repeats == 0 || !edges["Steady primary-lost"] {
		t.Fatalf("too little replayed: %d transitions (%d edges), %d observations (%d repeats), primary-lost seen: %v", transitions, len(edges), observations, repeats, edges["Steady primary-lost"])
	}
	t.Logf("replayed %d transitions over %d edges and %d observations (%d repeats)", transitions, len(edges), observations, repeats)
}

// pausedPrimary is a recorded run in which the primary hangs (SIGSTOP) for a while: the
// operator fails over after the simulator's detection probes.
func pausedPrimary(t *testing.T) replay.Journal { return pausedFor(t, 6) }

// pausedFor is pausedPrimary with the hang lasting ticks (seconds).
func pausedFor(t *testing.T, ticks int) replay.Journal {
	t.Helper()
	s := sim.New(sim.Topologies["replication"], sim.Options{Journal: true})
	op := sim.Step{Kind: sim.StepOperator}
	for i := 0; i < 40; i++ {
		s.Step(op)
	}
	if s.State().State != machine.Steady {
		t.Fatalf("not Steady before the fault: %s", s.State().State)
	}
	s.Step(sim.Step{Kind: sim.StepFault, Fault: sim.Fault{Kind: sim.FaultPause, Node: sim.NodeRef{Primary: true}, Ticks: ticks}})
	for i := 0; i < 60; i++ {
		s.Step(op)
	}
	s.Converge()
	if v := s.Violations(); len(v) > 0 {
		t.Fatal(v)
	}
	return s.Records()
}

func indexOf(rep replay.Report, replayed bool, event machine.Event) int {
	for i, s := range rep.Steps {
		o := s.Recorded
		if replayed {
			o = s.Replayed
		}
		if o.Event == event {
			return i
		}
	}
	return -1
}

// TestWhatIfMoreDetectionProbes: with more detection probes than the run had, the failover is
// taken later or not at all, and the report says where the decisions first differed.
func TestWhatIfMoreDetectionProbes(t *testing.T) {
	j := pausedPrimary(t)
	plain := replay.Replay(j, nil)
	recorded := indexOf(plain, false, machine.EventPrimaryLost)
	if recorded < 0 || plain.Differed != 0 {
		t.Fatalf("the recorded run has no failover (%d) or does not replay the same (%d differed)", recorded, plain.Differed)
	}
	// The same settings as recorded: the machine running on its own decisions is the record.
	same, err := replay.ParseOverrides([]string{"detectionProbes=2"})
	if err != nil {
		t.Fatal(err)
	}
	if rep := replay.Replay(j, same); rep.Differed != 0 || rep.Same != len(j.Records) {
		t.Fatalf("a what-if with the recorded settings differs: %d of %d", rep.Differed, len(j.Records))
	}
	more, err := replay.ParseOverrides([]string{"detectionProbes=5"})
	if err != nil {
		t.Fatal(err)
	}
	rep := replay.Replay(j, more)
	first := rep.FirstDifference()
	if first == nil {
		t.Fatal("five detection probes changed nothing")
	}
	if first.Recorded.Event != machine.EventPrimaryLost || !first.Replayed.None() {
		t.Fatalf("the first difference is %+v, want the recorded primary-lost not taken", *first)
	}
	if later := indexOf(rep, true, machine.EventPrimaryLost); later >= 0 && later <= recorded {
		t.Fatalf("with five probes primary-lost came at step %d, the record's at %d", later, recorded)
	}
	timings := rep.Timings()
	if len(timings) == 0 || timings[0].Event != machine.EventPrimaryLost || timings[0].Recorded.IsZero() || (!timings[0].Replayed.IsZero() && !timings[0].Replayed.After(timings[0].Recorded)) {
		t.Fatalf("timings %+v: want primary-lost first, recorded, and later or not at all with five probes", timings)
	}
	var out bytes.Buffer
	if err := rep.Write(&out, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"What-if replay of sim/replication with detectionProbes=5", "When, from the first divergence on", "  primary-lost: ", "would have differed; the first at seq", "Steady -> FailingOver (primary-lost)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}

// A primary that hangs long enough for five probes too: with five, the failover comes later,
// by the probes the record did not wait for.
func TestWhatIfMoreDetectionProbesFailsOverLater(t *testing.T) {
	j := pausedFor(t, 30)
	more, err := replay.ParseOverrides([]string{"detectionProbes=5"})
	if err != nil {
		t.Fatal(err)
	}
	rep := replay.Replay(j, more)
	timings := rep.Timings()
	if len(timings) == 0 || timings[0].Event != machine.EventPrimaryLost || timings[0].Replayed.IsZero() || !timings[0].Replayed.After(timings[0].Recorded) {
		var out bytes.Buffer
		_ = rep.Write(&out, false)
		t.Fatalf("timings %+v: want primary-lost later with five probes\n%s", timings, out.String())
	}
	t.Logf("primary-lost recorded at %s, with five probes at %s", timings[0].Recorded, timings[0].Replayed)
}

// Another fence bound: a longer one opens the promoted replica later than the record did (the
// hung primary is not known dead, so the fence's wait is what the promotion waits for), or not
// within the recorded run.
func TestWhatIfLongerFence(t *testing.T) {
	j := pausedFor(t, 30)
	longer, err := replay.ParseOverrides([]string{"fenceTimeout=40s"})
	if err != nil {
		t.Fatal(err)
	}
	rep := replay.Replay(j, longer)
	f := rep.FirstDifference()
	if f == nil || f.Recorded.None() || f.Recorded.Event == machine.EventPrimaryLost || f.Recorded.Event == machine.EventCandidateElected {
		var out bytes.Buffer
		_ = rep.Write(&out, false)
		t.Fatalf("first difference %+v: want the detection and election as recorded, then a later step\n%s", f, out.String())
	}
	for _, tm := range rep.Timings() {
		if tm.Event == f.Recorded.Event && !tm.Replayed.IsZero() && !tm.Replayed.After(tm.Recorded) {
			t.Fatalf("%s came earlier with a longer fence: %+v", tm.Event, tm)
		}
	}
	t.Logf("with fenceTimeout=40s: first difference at seq %d: %s", f.Seq, f.Detail)
}

// A plain replay that decides otherwise than recorded is a determinism failure, reported at
// the step where it happened (the decisions taken on the tampered state may differ too).
func TestReplayFindsATamperedDecision(t *testing.T) {
	j := pausedPrimary(t)
	i := -1
	for k, r := range j.Records {
		if r.Kind == replay.KindTransition && r.Entry.Event == machine.EventPrimaryLost {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("no primary-lost in the run")
	}
	j.Records[i].Entry.After.Op.Election.Candidate = "someone-else"
	rep := replay.Replay(j, nil)
	f := rep.FirstDifference()
	if f == nil || f.Record != i || !strings.Contains(f.Detail, `Op.Election.Candidate recorded "someone-else"`) {
		t.Fatalf("a tampered state was not found at record %d: %+v", i, f)
	}
	var out bytes.Buffer
	_ = rep.Write(&out, false)
	if !strings.Contains(out.String(), "NOT DETERMINISTIC: ") {
		t.Errorf("the report does not say so:\n%s", out.String())
	}
}
