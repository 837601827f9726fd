package v1alpha1

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// status.machine has the same shape in both versions: these functions copy it field by
// field (the leaf structs by type conversion, which the compiler checks).

func machineToHub(in *MachineStatus) *v1beta1.MachineStatus {
	if in == nil {
		return nil
	}
	return &v1beta1.MachineStatus{
		Seq: in.Seq, Since: in.Since, Clock: in.Clock,
		Shards:       convertSlice(in.Shards, shardRecordToHub),
		PodsPerShard: in.PodsPerShard,
		Operation:    operationToHub(in.Operation),
		Restored:     in.Restored,
		Rotation:     (*v1beta1.RotationRecord)(in.Rotation),
		Rotated:      in.Rotated,
		Certificate:  in.Certificate,
	}
}

func machineFromHub(in *v1beta1.MachineStatus) *MachineStatus {
	if in == nil {
		return nil
	}
	return &MachineStatus{
		Seq: in.Seq, Since: in.Since, Clock: in.Clock,
		Shards:       convertSlice(in.Shards, shardRecordFromHub),
		PodsPerShard: in.PodsPerShard,
		Operation:    operationFromHub(in.Operation),
		Restored:     in.Restored,
		Rotation:     (*RotationRecord)(in.Rotation),
		Rotated:      in.Rotated,
		Certificate:  in.Certificate,
	}
}

func shardRecordToHub(in ShardRecord) v1beta1.ShardRecord {
	return v1beta1.ShardRecord{
		Primary: in.Primary, RunID: in.RunID, History: replicationHistoryToHub(in.History),
		Epoch: in.Epoch, ClaimEpoch: in.ClaimEpoch, ClaimNode: in.ClaimNode,
		Deposed: convertSlice(in.Deposed, func(d DeposedPod) v1beta1.DeposedPod {
			return v1beta1.DeposedPod{Pod: d.Pod, Keys: d.Keys, Left: (*v1beta1.HistoryLink)(d.Left), Resyncing: d.Resyncing, ResyncKeys: d.ResyncKeys}
		}),
	}
}

func shardRecordFromHub(in v1beta1.ShardRecord) ShardRecord {
	return ShardRecord{
		Primary: in.Primary, RunID: in.RunID, History: replicationHistoryFromHub(in.History),
		Epoch: in.Epoch, ClaimEpoch: in.ClaimEpoch, ClaimNode: in.ClaimNode,
		Deposed: convertSlice(in.Deposed, func(d v1beta1.DeposedPod) DeposedPod {
			return DeposedPod{Pod: d.Pod, Keys: d.Keys, Left: (*HistoryLink)(d.Left), Resyncing: d.Resyncing, ResyncKeys: d.ResyncKeys}
		}),
	}
}

func replicationHistoryToHub(in ReplicationHistory) v1beta1.ReplicationHistory {
	return v1beta1.ReplicationHistory{
		ID: in.ID, PrevID: in.PrevID, PrevEnd: in.PrevEnd, PrevRestarted: in.PrevRestarted,
		Older: convertSlice(in.Older, func(l HistoryLink) v1beta1.HistoryLink { return v1beta1.HistoryLink(l) }),
	}
}

func replicationHistoryFromHub(in v1beta1.ReplicationHistory) ReplicationHistory {
	return ReplicationHistory{
		ID: in.ID, PrevID: in.PrevID, PrevEnd: in.PrevEnd, PrevRestarted: in.PrevRestarted,
		Older: convertSlice(in.Older, func(l v1beta1.HistoryLink) HistoryLink { return HistoryLink(l) }),
	}
}

func operationToHub(in *OperationRecord) *v1beta1.OperationRecord {
	if in == nil {
		return nil
	}
	return &v1beta1.OperationRecord{
		Shard: in.Shard, Lost: in.Lost, LostRunID: in.LostRunID,
		LostHistory: replicationHistoryToHub(in.LostHistory),
		Writer:      in.Writer, WriterRunID: in.WriterRunID, HandOver: in.HandOver,
		TargetPods: in.TargetPods, Leaving: in.Leaving, Rollout: in.Rollout, Planned: in.Planned,
		Candidate: in.Candidate, Unpromoted: in.Unpromoted,
		ElectedAt: in.ElectedAt, ElectedClock: in.ElectedClock, FenceFrom: in.FenceFrom,
		KnownFenced: in.KnownFenced, Reseed: in.Reseed,
		Preempted: v1beta1.State(in.Preempted),
		Wake:      in.Wake, WakeFrom: in.WakeFrom, Target: in.Target,
		TargetShards: in.TargetShards, Snapshot: in.Snapshot, GiveBack: in.GiveBack, TakenOver: in.TakenOver,
	}
}

func operationFromHub(in *v1beta1.OperationRecord) *OperationRecord {
	if in == nil {
		return nil
	}
	return &OperationRecord{
		Shard: in.Shard, Lost: in.Lost, LostRunID: in.LostRunID,
		LostHistory: replicationHistoryFromHub(in.LostHistory),
		Writer:      in.Writer, WriterRunID: in.WriterRunID, HandOver: in.HandOver,
		TargetPods: in.TargetPods, Leaving: in.Leaving, Rollout: in.Rollout, Planned: in.Planned,
		Candidate: in.Candidate, Unpromoted: in.Unpromoted,
		ElectedAt: in.ElectedAt, ElectedClock: in.ElectedClock, FenceFrom: in.FenceFrom,
		KnownFenced: in.KnownFenced, Reseed: in.Reseed,
		Preempted: State(in.Preempted),
		Wake:      in.Wake, WakeFrom: in.WakeFrom, Target: in.Target,
		TargetShards: in.TargetShards, Snapshot: in.Snapshot, GiveBack: in.GiveBack, TakenOver: in.TakenOver,
	}
}
