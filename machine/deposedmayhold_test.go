package machine

import "testing"

// In cluster mode Valkey may make a deposed primary follow the node that took its slots over
// by itself: s0-0, deposed when s0-1 was elected with no keys, may have synced the line and
// acknowledged a WAIT write s0-1 lost before both restarted from their append-only files.
// With more keys than its mark and than s0-2, which the mark would elect, nothing tells its
// keys from writes off the line: the failover waits for a person, and elects by the mark once
// the pod is named in failover-without.
func TestADeposedPodThatMayHaveSyncedTheLineHoldsTheFailoverBack(t *testing.T) {
	spec := durableSpec(2)
	spec.Mode = ModeCluster
	deposed := fromAppendOnlyFile(0, 2)
	writer := fromAppendOnlyFile(1, 1)
	holder := detached(node(2, RoleReplica, "h2", 1))
	holder.Valkey.ReplID2, holder.Valkey.SecondOffset, holder.Valkey.Keys = "h1", 1, 1
	d := Decide(deposedRecord(false), obsAt(5, spec, deposed, writer, holder))
	if d.Transition != nil || d.Waiting.Kind != WaitDeposedMayHoldTheLine || d.Waiting.Node != "s0-0" || d.Waiting.Peer != "s0-2" {
		t.Fatalf("want no failover, waiting for s0-0's keys to be given up, got %s (waiting %q)", d, d.Waiting)
	}
	given := spec
	given.FailoverWithout = []string{"s0-0"}
	d = electAfterLoss(t, deposedRecord(false), given, deposed, writer, holder)
	if d.Next.Op.Election.Candidate != "s0-2" || d.Transition.Why.KeysGivenUp != "s0-0" {
		t.Fatalf("want s0-2 elected once s0-0's keys are given up, the reason saying so, got %s", d)
	}
	// As narrow as the ambiguity: no more keys than the node elected by the mark, or a resync
	// recorded (its key count then measures a sync: DeposedPod.synced), or outside cluster
	// mode (only the machine makes a pod follow there), the election goes on as before.
	for name, c := range map[string]struct {
		p     Persisted
		spec  Spec
		nodes []Node
	}{
		"as many keys": {deposedRecord(false), spec, []Node{fromAppendOnlyFile(0, 1), writer, holder}},
		"resyncing":    {deposedRecord(true), spec, []Node{deposed, writer, holder}},
		"replication":  {deposedRecord(false), durableSpec(2), []Node{deposed, writer, holder}},
	} {
		if d := electAfterLoss(t, c.p, c.spec, c.nodes...); d.Next.Op.Election.Candidate != "s0-2" {
			t.Errorf("%s: want s0-2 elected, got %s", name, d)
		}
	}
}
