package machine

import "testing"

func TestAPlannedHandOverReadsSwitchingOverAndAFailureFailingOver(t *testing.T) {
	spec := testSpec(2)
	spec.Switchover = &Switchover{Shard: 0, To: "s0-2"}
	obs := obsAt(1, spec, primary(10), replica(1, 10), replica(2, 10))
	d := Decide(steadyState(), obs)
	if d.Transition == nil || d.Transition.Event != EventSwitchoverRequested {
		t.Fatalf("no switchover: %s", d)
	}
	if got := d.Next.Phase(); got != SwitchingOver {
		t.Errorf("a requested switchover's phase is %q, want %q", got, SwitchingOver)
	}
	c := observedOf(t, d.Next, obsAt(2, spec, primary(10), replica(1, 10), replica(2, 10)))
	if pr := c[ConditionProgressing]; pr.Reason != string(SwitchingOver) {
		t.Errorf("Progressing during a switchover: %+v", pr)
	}

	lost := testSpec(2)
	nodes := []Node{unreachable(primary(10), 5), replica(1, 10), replica(2, 10)}
	nodes[0].Pod.Running = false
	d = Decide(steadyState(), obsAt(5, lost, nodes...))
	if d.Next.State != FailingOver {
		t.Fatalf("a lost primary did not fail over: %s", d)
	}
	if got := d.Next.Phase(); got != Phase(FailingOver) {
		t.Errorf("a lost primary's phase is %q, want FailingOver", got)
	}
}

func TestEveryStateIsAPhase(t *testing.T) {
	phases := map[Phase]bool{}
	for _, p := range Phases() {
		phases[p] = true
	}
	for _, s := range States() {
		if !phases[Phase(s)] || (Persisted{State: s}).Phase() != Phase(s) {
			t.Errorf("state %s is not its own phase", s)
		}
	}
	if len(phases) != len(States())+1 || !phases[SwitchingOver] {
		t.Errorf("phases %v", Phases())
	}
}
