package machine

import (
	"encoding/json"
	"time"
)

// OperationRecord is the flat form of an Operation: one field set shared by every kind, as
// the cluster's status keeps it (status.machine.operation) and as journal entries written
// before Operation had its parts hold it. Two fields mean something per kind: Shard is the
// election's shard, or the hand-over's when no election runs (a rolling step); Target is the
// switchover's target node, the revision being rolled out or the restore request's ID. The
// state the record was written in says which (Operation).
type OperationRecord struct {
	Shard        int
	Lost         string
	LostRunID    string
	Writer       string
	WriterRunID  string
	LostHistory  History
	Planned      bool
	Candidate    string
	Unpromoted   bool
	ElectedAt    time.Time
	ElectedClock string
	FenceFrom    time.Time
	KnownFenced  bool
	Reseed       bool
	HandOver     string
	Preempted    State
	Wake         bool
	WakeFrom     string
	Target       string
	TargetShards int
	Leaving      bool
	Rollout      bool
	TargetPods   int
	Snapshot     string
	GiveBack     bool
	TakenOver    bool
}

// Operation is the operation r records for a machine in state.
func (r OperationRecord) Operation(state State) Operation {
	op := Operation{
		Election: Election{
			Lost: r.Lost, LostRunID: r.LostRunID, Writer: r.Writer, WriterRunID: r.WriterRunID, LostHistory: r.LostHistory,
			Planned: r.Planned, Candidate: r.Candidate, Unpromoted: r.Unpromoted, ElectedAt: r.ElectedAt, ElectedClock: r.ElectedClock,
			FenceFrom: r.FenceFrom, KnownFenced: r.KnownFenced, Reseed: r.Reseed, Preempted: r.Preempted, TakenOver: r.TakenOver,
		},
		Switchover:  SwitchoverGoal{Leaving: r.Leaving, Rollout: r.Rollout, Pods: r.TargetPods},
		Restore:     Restore{Snapshot: r.Snapshot, GiveBack: r.GiveBack},
		Reshard:     Reshard{Shards: r.TargetShards},
		Hibernation: Hibernation{Wake: r.Wake, From: r.WakeFrom},
	}
	if state == FailingOver || op.Election != (Election{}) {
		op.Election.Shard = r.Shard
	}
	if r.HandOver != "" {
		op.HandOver = HandOverMark{Shard: r.Shard, To: r.HandOver}
	}
	if r.Target != "" {
		// Only FailingOver, Rolling and Restoring hold a target; a record of another state
		// (none was ever written) is read by what else it holds.
		switch {
		case state == FailingOver || (state != Rolling && state != Restoring && r.Planned):
			op.Switchover.To = r.Target
		case state == Restoring || (state != Rolling && r.Snapshot != ""):
			op.Restore.Request = r.Target
		default:
			op.Roll.Revision = r.Target
		}
	}
	return op
}

// Record is op in its flat form: Record().Operation(state) is op again for the state op
// belongs to.
func (op Operation) Record() OperationRecord {
	e := op.Election
	shard := e.Shard
	if e == (Election{}) {
		shard = op.HandOver.Shard
	}
	target := op.Switchover.To
	if target == "" {
		target = op.Roll.Revision
	}
	if target == "" {
		target = op.Restore.Request
	}
	return OperationRecord{
		Shard: shard, Lost: e.Lost, LostRunID: e.LostRunID, Writer: e.Writer, WriterRunID: e.WriterRunID, LostHistory: e.LostHistory,
		Planned: e.Planned, Candidate: e.Candidate, Unpromoted: e.Unpromoted, ElectedAt: e.ElectedAt, ElectedClock: e.ElectedClock,
		FenceFrom: e.FenceFrom, KnownFenced: e.KnownFenced, Reseed: e.Reseed, HandOver: op.HandOver.To, Preempted: e.Preempted,
		Wake: op.Hibernation.Wake, WakeFrom: op.Hibernation.From, Target: target, TargetShards: op.Reshard.Shards,
		Leaving: op.Switchover.Leaving, Rollout: op.Switchover.Rollout, TargetPods: op.Switchover.Pods, Snapshot: op.Restore.Snapshot, GiveBack: op.Restore.GiveBack,
		TakenOver: e.TakenOver,
	}
}

// UnmarshalJSON reads a persisted state as encoding/json wrote it, also from a journal entry
// written before Operation had its parts: that one holds the operation in its flat form
// (OperationRecord), read for the state beside it.
func (p *Persisted) UnmarshalJSON(data []byte) error {
	type plain Persisted
	var in struct {
		plain
		Op json.RawMessage
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*p = Persisted(in.plain)
	p.Op = Operation{}
	if len(in.Op) == 0 || string(in.Op) == "null" {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(in.Op, &keys); err != nil {
		return err
	}
	if _, flat := keys["Lost"]; flat {
		var r OperationRecord
		if err := json.Unmarshal(in.Op, &r); err != nil {
			return err
		}
		p.Op = r.Operation(p.State)
		return nil
	}
	return json.Unmarshal(in.Op, &p.Op)
}
