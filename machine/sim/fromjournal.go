package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// The largest cluster the simulator is asked to model from a journal: every schedule step
// touches every node, and a larger one says nothing a smaller one does not.
const (
	maxJournalShards   = 6
	maxJournalReplicas = 5
)

// FromJournal is the topology a simulation starts from to continue a recorded cluster: its
// shape and settings from the journal's last observation, and a start (Topology.Start) that
// brings the simulated cluster to the journal's last state as far as the simulator can: Steady
// with each recorded primary where the journal's last state has it (shard 0, the one a
// switchover can move in the simulator), or hibernated. The description says what was carried
// over and what was not.
//
// Carried over: the topology (mode, shards, replicas per shard), persistence and appendfsync
// always, the write guarantee (minSyncReplicas), the detection probes, the primary of shard 0
// (by ordinal), hibernation. Not carried over: the data, run IDs, replication IDs and offsets
// (the simulated nodes hold the simulator's own), the sequence numbers and any operation in
// progress (the simulated cluster starts from its own bootstrap), the fence timeout and rotation
// grace (the simulator's world has its own lag bound in ticks, which the fence must exceed to
// be safe), pods that did not start, and everything outside the machine's observation.
func FromJournal(j replay.Journal) (Topology, string, error) {
	var last *machine.Observation
	var state *machine.Persisted
	for i := range j.Records {
		r := &j.Records[i]
		switch r.Kind {
		case replay.KindTransition, replay.KindBackfilled:
			if r.Entry.Observed != nil {
				last = r.Entry.Observed
			}
			if r.Kind == replay.KindTransition {
				after := r.Entry.After
				state = &after
			}
		case replay.KindObservation:
			if r.Observed != nil && r.Observed.Observation != nil {
				last = r.Observed.Observation
			}
		}
	}
	if last == nil {
		return Topology{}, "", errors.New("the journal holds no observation (journaled before the operator kept them?): the simulator cannot tell the cluster's shape")
	}
	spec := last.Spec
	t := Topology{
		Name: "journal", Mode: spec.Mode, Shards: max(spec.Shards, 1), Replicas: spec.Replicas,
		Persistence: spec.Persistence, FsyncAlways: spec.FsyncAlways && spec.Persistence,
		MinSyncReplicas: spec.MinSyncReplicas, FailureThreshold: spec.FailureThreshold,
	}
	if t.Mode == "" {
		t.Mode = machine.ModeReplication
	}
	if t.Mode != machine.ModeCluster {
		t.Shards = 1
	}
	if t.Shards > maxJournalShards || t.Replicas > maxJournalReplicas {
		return Topology{}, "", fmt.Errorf("the journal's cluster has %d shards of %d replicas: the simulator models at most %d shards of %d", t.Shards, t.Replicas, maxJournalShards, maxJournalReplicas)
	}
	if j.Cluster != "" {
		t.Name = "journal:" + j.Cluster
	}
	if t.Replicas > 0 {
		t.MinReplicas, t.MaxReplicas = max(t.Replicas-1, 0), t.Replicas+1
	}
	if t.Mode == machine.ModeCluster {
		t.ReshardTo = []int{t.Shards, t.Shards + 1}
	}
	var carried []string
	carried = append(carried, fmt.Sprintf("%s, %d shard(s) of 1+%d pods, persistence %v, fsync always %v, minSyncReplicas %d, detection probes %d",
		t.Mode, t.Shards, t.Replicas, t.Persistence, t.FsyncAlways, t.MinSyncReplicas, max(t.FailureThreshold, 1)))
	// The start: the simulated cluster bootstraps, then is brought to the recorded state.
	settle := func(n int) {
		for i := 0; i < n; i++ {
			t.Start = append(t.Start, Step{Kind: StepOperator})
		}
	}
	settle(40)
	if state != nil && len(state.Shards) > 0 {
		for _, n := range last.Nodes {
			if n.Name == state.Shards[0].Primary && n.Shard == 0 && n.Ordinal > 0 && n.Ordinal <= t.Replicas {
				t.Start = append(t.Start, Step{Kind: StepUser, User: UserAction{Kind: UserSwitchover, To: n.Ordinal}})
				settle(30)
				carried = append(carried, fmt.Sprintf("the primary of shard 0 at ordinal %d (%s)", n.Ordinal, n.Name))
			}
		}
	}
	if spec.Hibernate || (state != nil && state.State == machine.Hibernated) {
		if t.Persistence {
			t.Start = append(t.Start, Step{Kind: StepUser, User: UserAction{Kind: UserHibernate}})
			settle(40)
			carried = append(carried, "hibernation")
		}
	}
	recorded := "unknown"
	if state != nil {
		recorded = fmt.Sprintf("%s (seq %d)", state.State, state.Seq)
	}
	desc := fmt.Sprintf("starting from the journal of %s, last state %s: %s; not carried over: the data, run and replication IDs, offsets, sequence numbers, any operation in progress, the fence timeout and rotation grace (the simulator's own, in ticks)",
		orUnknown(j.Cluster), recorded, strings.Join(carried, "; "))
	return t, desc, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "an unnamed cluster"
	}
	return s
}
