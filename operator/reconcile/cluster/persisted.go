package cluster

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// persistedOf reads the machine's memory back from status: status.state and status.machine.
func persistedOf(st *v1beta1.ValkeyClusterStatus) machine.Persisted {
	p := machine.Persisted{State: machine.State(st.State)}
	m := st.Machine
	if m == nil {
		return p
	}
	p.Seq = uint64(m.Seq)
	p.Since = microTime(m.Since)
	p.Clock = m.Clock
	p.Restored = m.Restored
	p.PodsPerShard = int(m.PodsPerShard)
	p.Rotated = m.Rotated
	p.Certificate = m.Certificate
	if r := m.Rotation; r != nil {
		p.Rotation = machine.Rotation{ID: r.ID, Users: r.Users, Phase: machine.RotationPhase(r.Phase), PublishedAt: microTime(r.PublishedAt), PublishedClock: r.PublishedClock}
	}
	for _, s := range m.Shards {
		p.Shards = append(p.Shards, machine.ShardRecord{Primary: s.Primary, RunID: s.RunID, History: historyOf(s.History), Epoch: uint64(s.Epoch), ClaimEpoch: uint64(s.ClaimEpoch), ClaimNode: s.ClaimNode, Deposed: deposedOf(s.Deposed)})
	}
	if o := m.Operation; o != nil {
		p.Op = operationOf(p.State, o)
	}
	return p
}

// machineStatusOf is the inverse of persistedOf.
func machineStatusOf(p machine.Persisted) *v1beta1.MachineStatus {
	m := &v1beta1.MachineStatus{Seq: int64(p.Seq), Since: toMicro(p.Since), Clock: p.Clock, Restored: p.Restored, PodsPerShard: int32(p.PodsPerShard), Rotated: p.Rotated, Certificate: p.Certificate}
	if r := p.Rotation; r != (machine.Rotation{}) {
		m.Rotation = &v1beta1.RotationRecord{ID: r.ID, Users: r.Users, Phase: string(r.Phase), PublishedAt: toMicro(r.PublishedAt), PublishedClock: r.PublishedClock}
	}
	for _, s := range p.Shards {
		m.Shards = append(m.Shards, v1beta1.ShardRecord{Primary: s.Primary, RunID: s.RunID, History: apiHistory(s.History), Epoch: int64(s.Epoch), ClaimEpoch: int64(s.ClaimEpoch), ClaimNode: s.ClaimNode, Deposed: apiDeposed(s.Deposed)})
	}
	if p.Op != (machine.Operation{}) {
		m.Operation = operationRecordOf(p.Op)
	}
	return m
}

func historyOf(h v1beta1.ReplicationHistory) machine.History {
	out := machine.History{ID: h.ID, PrevID: h.PrevID, PrevEnd: h.PrevEnd, PrevRestarted: h.PrevRestarted}
	for i, l := range h.Older {
		if i < len(out.Older) {
			out.Older[i] = linkOf(l)
		}
	}
	return out
}

// apiHistory keeps the used links of the machine's fixed-size chain (unused ones are zero).
func apiHistory(h machine.History) v1beta1.ReplicationHistory {
	out := v1beta1.ReplicationHistory{ID: h.ID, PrevID: h.PrevID, PrevEnd: h.PrevEnd, PrevRestarted: h.PrevRestarted}
	used := 0
	for i, l := range h.Older {
		if l != (machine.HistoryLink{}) {
			used = i + 1
		}
	}
	for _, l := range h.Older[:used] {
		out.Older = append(out.Older, apiLink(l))
	}
	return out
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func toMicro(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t)
	return &m
}

// historyRecordsOf converts status.history for the machine (history checks, journal backfill).
func historyRecordsOf(h []v1beta1.HistoryEntry) []machine.HistoryRecord {
	out := make([]machine.HistoryRecord, 0, len(h))
	for _, e := range h {
		out = append(out, machine.HistoryRecord{
			Seq: uint64(e.Seq), From: machine.State(e.From), To: machine.State(e.To), Event: machine.Event(e.Event),
			Reason: e.Reason, Message: e.Message, Time: e.Time.UTC(),
		})
	}
	return out
}

func historyEntryOf(r machine.HistoryRecord) v1beta1.HistoryEntry {
	return v1beta1.HistoryEntry{
		Seq: int64(r.Seq), Time: metav1.NewTime(r.Time), From: v1beta1.State(r.From), To: v1beta1.State(r.To),
		Event: string(r.Event), Reason: r.Reason, Message: r.Message,
	}
}

// conditionsOf and apiConditions convert between the machine's conditions and Kubernetes'.
func conditionsOf(conds []metav1.Condition) []machine.Condition {
	out := make([]machine.Condition, 0, len(conds))
	for _, c := range conds {
		out = append(out, machine.Condition{Type: c.Type, Status: machine.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.UTC()})
	}
	return out
}

func apiConditions(conds []machine.Condition, generation int64) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(conds))
	for _, c := range conds {
		reason := c.Reason
		if reason == "" {
			reason = "NewCluster"
		}
		out = append(out, metav1.Condition{
			Type: c.Type, Status: metav1.ConditionStatus(c.Status), Reason: reason, Message: c.Message,
			LastTransitionTime: metav1.NewTime(c.LastTransitionTime), ObservedGeneration: generation,
		})
	}
	return out
}

// linkOf and apiLink convert one history link (the chain's, a deposed pod's Left).
func linkOf(l v1beta1.HistoryLink) machine.HistoryLink {
	return machine.HistoryLink{ID: l.ID, End: l.End, Restarted: l.Restarted}
}

func apiLink(l machine.HistoryLink) v1beta1.HistoryLink {
	return v1beta1.HistoryLink{ID: l.ID, End: l.End, Restarted: l.Restarted}
}

func deposedOf(ds []v1beta1.DeposedPod) []machine.DeposedPod {
	var out []machine.DeposedPod
	for _, d := range ds {
		m := machine.DeposedPod{Pod: d.Pod, Keys: d.Keys, Resyncing: d.Resyncing, ResyncKeys: d.ResyncKeys}
		if d.Left != nil {
			m.Left = linkOf(*d.Left)
		}
		out = append(out, m)
	}
	return out
}

func apiDeposed(ds []machine.DeposedPod) []v1beta1.DeposedPod {
	var out []v1beta1.DeposedPod
	for _, d := range ds {
		a := v1beta1.DeposedPod{Pod: d.Pod, Keys: d.Keys, Resyncing: d.Resyncing, ResyncKeys: d.ResyncKeys}
		if d.Left != (machine.HistoryLink{}) {
			left := apiLink(d.Left)
			a.Left = &left
		}
		out = append(out, a)
	}
	return out
}
