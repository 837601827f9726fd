package sim

import (
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// TestAnEvictedPrimaryHandsOverBeforeItsPodStops: a graceful deletion of the primary's pod
// (kubectl delete, a drain) is held by the preStop hook while the node is a primary with a
// linked replica; the machine hands the role over (primary-leaving), the hook returns, the pod
// stops as a replica and is recreated. No failover, no WAIT-acknowledged write lost, writes
// go on after it.
func TestAnEvictedPrimaryHandsOverBeforeItsPodStops(t *testing.T) {
	s := New(Topologies["replication-persistent"], Options{Trace: true})
	for i := 0; i < 12; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	s.Step(Step{Kind: StepWrite, Write: Write{Key: 1, Wait: true}})
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultEvictPod, Node: NodeRef{Primary: true}}})
	for i := 0; i < 10; i++ {
		s.Step(Step{Kind: StepOperator})
		s.Step(Step{Kind: StepWrite, Write: Write{Key: 2 + i, Wait: true}})
	}
	s.Converge()
	trace := s.Trace()
	if vs := s.Violations(); len(vs) > 0 {
		t.Fatalf("%v\n%s", vs, strings.Join(trace, "\n"))
	}
	handOver, stops := lineIndex(trace, "s0-0 handed over to"), lineIndex(trace, "kube: s0-0 stops (its preStop hook returned: no primary with a replica)")
	if handOver < 0 || stops < 0 || stops < handOver {
		t.Fatalf("want s0-0 handed over (line %d) before its pod stops (line %d):\n%s", handOver, stops, strings.Join(trace, "\n"))
	}
	var events []machine.Event
	for _, r := range s.Status().History {
		events = append(events, r.Event)
	}
	if want := eventsString([]machine.Event{machine.EventPrimaryLeaving, machine.EventFailoverComplete}); !strings.Contains(eventsString(events), want) || strings.Contains(eventsString(events), string(machine.EventPrimaryLost)) {
		t.Fatalf("want a hand-over, not a failover, in the history: %v\n%s", events, strings.Join(trace, "\n"))
	}
}
