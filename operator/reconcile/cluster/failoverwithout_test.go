package cluster

import (
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The failover-without annotation goes once every pod it names answers again, except a deposed
// pod the record keeps: named, it answers and gives its keys beyond its mark up, and the failover
// it was given for still needs it; it goes once that failover completes.
func TestFailoverWithoutStaysForADeposedPodUntilTheFailoverCompletes(t *testing.T) {
	obs := machine.Observation{Nodes: []machine.Node{{Name: "s0-0", Reachable: true}, {Name: "s0-1", Reachable: true}}}
	deposedIn := machine.Decision{Next: machine.Persisted{Shards: []machine.ShardRecord{{Primary: "s0-1", Deposed: []machine.DeposedPod{{Pod: "s0-0"}}}}}}
	if why, _ := failoverWithoutDone([]string{"s0-0"}, obs, machine.Decision{}); why == "" {
		t.Fatal("a pod that answers again and is not deposed: want the annotation removed")
	}
	if why, _ := failoverWithoutDone([]string{"s0-0"}, obs, deposedIn); why != "" {
		t.Fatalf("a deposed pod that answers: want the annotation kept, got removed (%s)", why)
	}
	done := deposedIn
	done.Transition = &machine.Transition{Event: machine.EventFailoverComplete}
	if why, _ := failoverWithoutDone([]string{"s0-0"}, obs, done); why == "" {
		t.Fatal("the failover completed: want the annotation removed")
	}
	if _, unknown := failoverWithoutDone([]string{"s9-9"}, obs, deposedIn); len(unknown) != 1 {
		t.Fatalf("want s9-9 reported as no pod, got %v", unknown)
	}
}
