package cluster

import (
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// The status keeps the operation in its flat form (machine.OperationRecord), as every operator
// version wrote it; the state beside it says which kind of operation it records.

// operationOf reads the operation of a machine in state from its status record.
func operationOf(state machine.State, o *v1beta1.OperationRecord) machine.Operation {
	return machine.OperationRecord{
		Shard: int(o.Shard), Lost: o.Lost, LostRunID: o.LostRunID, Writer: o.Writer, WriterRunID: o.WriterRunID,
		LostHistory: historyOf(o.LostHistory), Planned: o.Planned, Candidate: o.Candidate, Unpromoted: o.Unpromoted, ElectedAt: microTime(o.ElectedAt), ElectedClock: o.ElectedClock, FenceFrom: microTime(o.FenceFrom),
		KnownFenced: o.KnownFenced, Reseed: o.Reseed, HandOver: o.HandOver, Preempted: machine.State(o.Preempted), Wake: o.Wake, WakeFrom: o.WakeFrom, Leaving: o.Leaving, Rollout: o.Rollout,
		Target: o.Target, TargetShards: int(o.TargetShards), TargetPods: int(o.TargetPods), Snapshot: o.Snapshot, GiveBack: o.GiveBack, TakenOver: o.TakenOver,
	}.Operation(state)
}

// operationRecordOf is the inverse of operationOf.
func operationRecordOf(op machine.Operation) *v1beta1.OperationRecord {
	o := op.Record()
	return &v1beta1.OperationRecord{
		Shard: int32(o.Shard), Lost: o.Lost, LostRunID: o.LostRunID, Writer: o.Writer, WriterRunID: o.WriterRunID,
		LostHistory: apiHistory(o.LostHistory), Planned: o.Planned, Candidate: o.Candidate, Unpromoted: o.Unpromoted, ElectedAt: toMicro(o.ElectedAt), ElectedClock: o.ElectedClock, FenceFrom: toMicro(o.FenceFrom),
		KnownFenced: o.KnownFenced, Reseed: o.Reseed, HandOver: o.HandOver, Preempted: v1beta1.State(o.Preempted), Wake: o.Wake, WakeFrom: o.WakeFrom, Leaving: o.Leaving, Rollout: o.Rollout,
		Target: o.Target, TargetShards: int32(o.TargetShards), TargetPods: int32(o.TargetPods), Snapshot: o.Snapshot, GiveBack: o.GiveBack, TakenOver: o.TakenOver,
	}
}
