package machine

import (
	"fmt"
	"time"
)

// Taking a failover over in the Sentinel topology. Sentinel's quorum decides failovers, but
// there are failovers it can never make: the primary lost before the sentinels were told it
// (or before quorum of them monitor it), or a failover the sentinels cannot finish (no
// replica they may promote, retried for ever; a pick that came up fenced and lacks data).
// Then the machine carries the failover out itself, with the Replication topology's election,
// promotion and fence wait (Election.TakenOver), and tells the sentinels the new primary
// afterwards under config epoch 0 (sentinelmonitor.go). Two deciders must never act at once,
// so first no sentinel may monitor the group: the group is removed from those that do
// (SentinelRemove), and only once every sentinel that runs answers monitoring nothing does
// the machine take over. A sentinel that monitors nothing neither starts a failover nor
// votes for one. Every sentinel must answer: one out of sight could still fail the group over,
// or come back naming the old primary under a config epoch newer than the 0 the machine
// tells the others, and the newer epoch wins (the sentinels would then point the new primary
// at the old one).

// sentinelsAllAnswer reports whether every sentinel that runs is observed answering.
func (d *decider) sentinelsAllAnswer() bool {
	if d.sentinelsRun() <= 0 || len(d.obs.Sentinels) < d.sentinelsRun() {
		return false
	}
	for _, s := range d.obs.Sentinels {
		if !s.Reachable {
			return false
		}
	}
	return true
}

// sentinelsCannotAct reports whether every sentinel answers and none monitors the group.
func (d *decider) sentinelsCannotAct() bool {
	if !d.sentinelsAllAnswer() {
		return false
	}
	for _, s := range d.obs.Sentinels {
		if s.Monitoring {
			return false
		}
	}
	return true
}

// sentinelQuorum is the quorum the sentinels are told (a majority when the spec says none).
func (d *decider) sentinelQuorum() int { return d.sentinelSettings().Quorum }

// sentinelSettings are the settings the sentinels are told and compared with: the spec's, its
// quorum a majority of the sentinels when it says none. One value for both, or a sentinel told
// quorum 0 (which SENTINEL MONITOR refuses) would be told again on every turn while the
// take-over counted a majority.
func (d *decider) sentinelSettings() SentinelSettings {
	s := d.v.spec.SentinelSettings
	if s.Quorum <= 0 {
		s.Quorum = d.sentinelMajority()
	}
	// While the count moves towards the spec's, a quorum above the sentinels that run would
	// keep every failover from starting.
	s.Quorum = min(s.Quorum, max(1, d.sentinelsRun()))
	return s
}

// sentinelsGaveUp reports whether the sentinels' failover recorded in p (FailingOver) has run
// twice failover-timeout on this clock: Sentinel starts a new attempt no sooner, so one that
// has not produced a primary the machine could record by then is not going to.
func (d *decider) sentinelsGaveUp(p Persisted) bool {
	timeout := time.Duration(d.v.spec.SentinelSettings.FailoverTimeoutMillis) * time.Millisecond
	return p.State == FailingOver && !p.Op.Election.TakenOver && timeout > 0 &&
		p.Clock == d.obs.Clock && d.obs.Time.Sub(p.Since) >= 2*timeout
}

// guardSentinelClockReset: the sentinels' failover (FailingOver, not taken over) was recorded
// on another operator incarnation's clock: time it again from this observation, or the
// take-over after twice failover-timeout (sentinelsGaveUp) would never come.
func guardSentinelClockReset(d *decider) (outcome, bool) {
	p := d.p
	if p.Op.Election.TakenOver || p.Clock == d.obs.Clock {
		return outcome{}, false
	}
	return outcome{next: p, message: "the sentinels' failover was recorded on another operator incarnation's clock; it is timed again from now"}, true
}

// sentinelsToRemove are the sentinels the group is removed from before the machine takes the
// failover of the shard's lost primary over (none when it may not): every sentinel answers,
// the primary is lost and a node may be elected (the Replication topology's primary-lost
// rule), and either fewer than the quorum of them monitor the group (no failover can start:
// it needs quorum sentinels to find the primary down, and the machine never tells a lost
// primary) or the sentinels' failover (FailingOver, recorded when the primary was lost or a
// sentinel reported it) has run twice failover-timeout: sentinels that cannot see each other
// (they learn of each other through the data nodes) never find the primary down together.
func (d *decider) sentinelsToRemove(p Persisted) []Sentinel {
	if len(p.Shards) == 0 || !d.sentinelsAllAnswer() {
		return nil
	}
	var monitoring []Sentinel
	for _, s := range d.obs.Sentinels {
		if s.Monitoring {
			monitoring = append(monitoring, s)
		}
	}
	if len(monitoring) == 0 {
		return nil
	}
	switch {
	case p.State != Steady && (p.State != FailingOver || p.Op.Election.TakenOver):
		return nil
	case len(monitoring) < d.sentinelQuorum():
	case d.sentinelsGaveUp(p):
	default:
		return nil
	}
	if blocked, _ := d.takeOverBlocked(p); blocked {
		return nil
	}
	return monitoring
}

// onlyRecordedHistory reports whether the data of the shard's nodes that answer with any is
// all on the recorded line, so that the take-over's election can weigh it. The recorded
// primary aside, every such node is a replica on the recorded history, or on the history the
// recorded primary continued short of where it continued it (the recorded primary, a Sentinel
// pick, was lost before that replica synced from it). One history may have continued the
// recorded one (a node the sentinels promoted, or a person's FAILOVER TO target, holding the
// line and what it took since; nodes that followed it take it too): then every node with
// data, the recorded primary included, is on that history or on the recorded one short of
// where it was continued, and only a node on that history may be a primary. The take-over
// runs only then. A node that followed the old primary past such a promotion holds writes off
// the line, and the election's comparison of histories is not proven against it (the
// exploration found it judging the promoted node to hold the data of one that followed the
// old primary after that promotion), so the machine waits and says what the sentinels say.
func (d *decider) onlyRecordedHistory(rec ShardRecord) bool { return d.offRecordedLine(rec) == "" }

// offRecordedLine names the node whose data stops the take-over (onlyRecordedHistory), with
// why, or is "" when none does.
func (d *decider) offRecordedLine(rec ShardRecord) string {
	h := rec.History
	withData := func(n *Node) bool { return usable(n) && !n.Valkey.empty() }
	next, split := "", int64(0)
	for _, n := range d.v.shard(0) {
		if !withData(n) || h.ID == "" || n.Valkey.ReplID2 != h.ID || n.Valkey.ReplID == h.ID {
			continue
		}
		if next != "" && (n.Valkey.ReplID != next || n.Valkey.SecondOffset != split) {
			return n.Name + " continues the recorded history on another history than another node does"
		}
		next, split = n.Valkey.ReplID, n.Valkey.SecondOffset
	}
	for _, n := range d.v.shard(0) {
		if !withData(n) || (n.Name == rec.Primary && next == "") {
			continue
		}
		onPrev := h.PrevID != "" && !h.PrevRestarted && n.Valkey.ReplID == h.PrevID && n.Valkey.Offset < h.PrevEnd
		switch {
		case next != "" && n.Valkey.ReplID == next:
		case n.Valkey.Role == RolePrimary:
			return n.Name + " is a primary on a history of its own"
		case next == "" && n.Valkey.ReplID == h.ID:
		case next != "" && n.Valkey.ReplID == h.ID && n.Valkey.Offset < split:
		case onPrev:
		default:
			return n.Name + " holds writes off the recorded line (it followed the old primary past a promotion, or took another history)"
		}
	}
	return ""
}

// takeOverHeldBack says why the machine does not take over the sentinels' failover once it
// has run twice failover-timeout ("" when it does, or before then): the status then says what
// stands in the way, not only that the sentinels are failing over.
func (d *decider) takeOverHeldBack(p Persisted) string {
	if len(p.Shards) == 0 || !d.sentinelsGaveUp(p) {
		return ""
	}
	if !d.sentinelsAllAnswer() {
		return "not every sentinel answers the operator, and one out of sight could still fail the primary over"
	}
	_, why := d.takeOverBlocked(p)
	return why
}

// takeOverBlocked reports whether the shard's data or its failover keeps the machine from
// taking the failover over, and why: a node whose data the election may not weigh
// (offRecordedLine), or what the Replication topology's failover waits for.
func (d *decider) takeOverBlocked(p Persisted) (bool, string) {
	if off := d.offRecordedLine(p.Shards[0]); off != "" {
		return true, off + "; make the node with the data the primary by hand (REPLICAOF NO ONE on it), then point every sentinel at it (SENTINEL REMOVE and SENTINEL MONITOR with its address)"
	}
	if _, why, ok := d.failoverOf(p, 0, nil); !ok {
		return true, why.wait(WaitFailover, p.Shards[0].Primary).String()
	}
	return false, ""
}

// guardSentinelTakeOver: every sentinel answers monitoring nothing, and the recorded primary
// is lost with a node that may be elected: the machine fails it over itself.
func guardSentinelTakeOver(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 || p.Op.Election.TakenOver || !d.sentinelsCannotAct() || !d.onlyRecordedHistory(p.Shards[0]) {
		return outcome{}, false
	}
	op, fault, ok := d.lostShard(p, 0, nil)
	if !ok {
		return outcome{}, false
	}
	op.Election.TakenOver = true
	next := p
	next.Op = op
	msg := fmt.Sprintf("; all %d sentinels answer and none monitors the group, so none can fail it over: the operator fails %s over itself, then tells the sentinels the new primary", len(d.obs.Sentinels), p.Shards[0].Primary)
	return outcome{next: next, why: Reason{Kind: ReasonPrimaryLost, Shard: 0, Fault: fault}, message: msg}, true
}
