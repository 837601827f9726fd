package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// scaleDownOffThePrimary is a replication cluster whose primary was switched over to s0-2
// before the user scales it down to one replica: ordinal 2 goes.
func scaleDownOffThePrimary() []Step {
	var steps []Step
	op := func(n int) {
		for i := 0; i < n; i++ {
			steps = append(steps, Step{Kind: StepOperator})
		}
	}
	op(12)
	steps = append(steps, Step{Kind: StepUser, User: UserAction{Kind: UserSwitchover, To: 2}})
	op(8)
	steps = append(steps, Step{Kind: StepUser, User: UserAction{Kind: UserSwitchover, Clear: true}},
		Step{Kind: StepWrite, Write: Write{Key: 1, Wait: true}},
		Step{Kind: StepUser, User: UserAction{Kind: UserScaleDown}})
	for i := 0; i < 8; i++ {
		steps = append(steps, Step{Kind: StepOperator}, Step{Kind: StepWrite, Write: Write{Key: 2 + i, Wait: true}})
	}
	return steps
}

func lineIndex(lines []string, substr string) int {
	for i, l := range lines {
		if strings.Contains(l, substr) {
			return i
		}
	}
	return -1
}

// A scale-down whose primary is on a removed ordinal hands the primary over before the pod
// goes, and the history says so; scaling as a plain EnsureObjects of the spec (the sabotage)
// removes the primary's pod and is caught.
func TestScaleDownHandsOverBeforeThePodGoes(t *testing.T) {
	topo := Topologies["replication"]
	s := New(topo, Options{Trace: true})
	for _, st := range scaleDownOffThePrimary() {
		s.Step(st)
	}
	s.Converge()
	trace := s.Trace()
	if vs := s.Violations(); len(vs) > 0 {
		t.Fatalf("%v\n%s", vs, strings.Join(trace, "\n"))
	}
	handOver, removed := lineIndex(trace, "s0-2 handed over to"), lineIndex(trace, "kube: s0-2 removed by the scale-down")
	if handOver < 0 || removed < 0 || removed < handOver {
		t.Fatalf("want s0-2 handed over (line %d) before its pod goes (line %d):\n%s", handOver, removed, strings.Join(trace, "\n"))
	}
	var events []machine.Event
	for _, r := range s.Status().History {
		events = append(events, r.Event)
	}
	want := []machine.Event{machine.EventReplicasChanged, machine.EventScaleDownHandOver, machine.EventFailoverComplete}
	if !strings.Contains(eventsString(events), eventsString(want)) {
		t.Fatalf("history %v does not record %v", events, want)
	}
	if st := s.State(); st.PodsPerShard != 2 || st.Shards[0].Primary == "s0-2" {
		t.Fatalf("want 2 pods per shard recorded and a primary that stays, got %+v", st)
	}

	sabotaged := Run(topo, scaleDownOffThePrimary(), Options{Sabotage: SabotageShrinkFirst})
	found := false
	for _, v := range sabotaged.Violations {
		found = found || v.Kind == ViolationScaledDownPrimary
	}
	if !found {
		t.Fatalf("shrinking first went unnoticed: %v", sabotaged.Violations)
	}
}

func eventsString(es []machine.Event) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e)
	}
	return " " + strings.Join(s, " ") + " "
}

// Scaling up creates pods for the new ordinals; scaling down removes the highest ordinals,
// and with persistence their volumes come back on a later scale-up, as whenScaled: Retain
// keeps them.
func TestWorldScalesLikeAStatefulSet(t *testing.T) {
	w := NewWorld(Topologies["replication-persistent"])
	w.objects = machine.Objects{Shards: 1, Replicas: 2, Revision: "r1"}
	w.kube()
	s2 := w.byName("s0-2")
	s2.appendWrite(0)
	w.objects.Replicas = 1
	w.kube()
	if w.byName("s0-2") != nil || len(w.nodes) != 2 {
		t.Fatalf("want s0-2 removed, have %d nodes", len(w.nodes))
	}
	w.objects.Replicas = 3
	w.kube()
	back := w.byName("s0-2")
	if back == nil || !back.exists || len(back.log) != 1 || w.byName("s0-3") == nil || len(w.byName("s0-3").log) != 0 {
		t.Fatalf("want s0-2 back on its retained volume and a new, empty s0-3: %+v", w.nodes)
	}
	// The recorded primary's pod removed by a scale-down is a violation.
	w.recorded = []machine.ShardRecord{{Primary: "s0-3", RunID: w.byName("s0-3").runID}}
	w.objects.Replicas = 2
	w.kube()
	if len(w.violations) != 1 || w.violations[0].Kind != ViolationScaledDownPrimary {
		t.Fatalf("want scaled-down-primary, got %v", w.violations)
	}
}

// The replica count changes again while the scale-down hand-over has not happened (it
// failed): the hand-over is abandoned (spec-changed) and the new count recorded.
func TestReplicaCountChangedDuringAScaleDownHandOver(t *testing.T) {
	steps := scaleDownOffThePrimary()[:24] // up to the scale-down request
	steps = append(steps,
		Step{Kind: StepOperator}, // replicas-changed
		Step{Kind: StepOperator}, // scale-down-hand-over
		Step{Kind: StepFault, Fault: Fault{Kind: FaultActuatorFailure, Count: 1}},
		Step{Kind: StepUser, User: UserAction{Kind: UserScaleUp}},
		Step{Kind: StepOperator}, // the hand-over fails
		Step{Kind: StepOperator}, // spec-changed
		Step{Kind: StepOperator}, // replicas-changed
	)
	res := Run(Topologies["replication"], steps, Options{Trace: true})
	if len(res.Violations) > 0 {
		t.Fatalf("%v\n%s", res.Violations, strings.Join(res.Trace, "\n"))
	}
	trace := strings.Join(res.Trace, "\n")
	for _, want := range []string{
		"FailingOver --spec-changed--> Steady: shard 0: replica count changed to 2 during the hand-over for the scale-down to 2 pod(s) per shard",
		"Steady --replicas-changed--> Steady: scale from 2 to 3 pod(s) per shard: keep ordinal 2, not removed yet by the scale-down to 2",
	} {
		if !strings.Contains(trace, want) {
			t.Fatalf("history lacks %q:\n%s", want, trace)
		}
	}
	if strings.Contains(trace, "removed by the scale-down") {
		t.Fatalf("no pod may go:\n%s", trace)
	}
}

// The actuator refuses to shrink the objects over a pod that answers as a primary: the
// scale-down was decided when it was a replica.
func TestShrinkOverAPrimaryIsRefused(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, r2, p, r1)
	if err := w.Apply(context.Background(), machine.EnsureObjects{Shards: 1, Replicas: 1, Revision: "r1"}); err == nil || w.objects.Replicas != 2 {
		t.Fatalf("want the shrink over s0-2 refused, got %v (objects %+v)", err, w.objects)
	}
	r2.role = machine.RoleReplica
	wire(w, p, r1, r2)
	if err := w.Apply(context.Background(), machine.EnsureObjects{Shards: 1, Replicas: 1, Revision: "r1"}); err != nil {
		t.Fatalf("s0-2 is a replica again: %v", err)
	}
}
