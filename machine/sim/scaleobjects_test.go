package sim

import "testing"

// scale-statefulset scales the StatefulSets in any state, Bootstrapping included, up to the
// topology's pods.
func TestScaleStatefulSetInAnyState(t *testing.T) {
	s := New(Topologies["cluster"], Options{})
	s.Step(Step{Kind: StepOperator}) // decides the objects
	s.Step(Step{Kind: StepOperator}) // ensure-objects
	if got := s.w.objects.Replicas; got != 1 {
		t.Fatalf("objects ask for %d replicas before the scale, want 1", got)
	}
	for _, want := range []int{2, 2} { // the topology's maximum is 2
		s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultScaleStatefulSet}})
		if got := s.w.objects.Replicas; got != want {
			t.Errorf("in Bootstrapping: objects ask for %d replicas, want %d", got, want)
		}
	}
}
