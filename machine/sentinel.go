package machine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// The Sentinel topology (ModeSentinel): one primary and its replicas, watched by Valkey
// Sentinel. Sentinel's quorum decides unplanned failovers; the machine never promotes a node
// after the bootstrap, because two deciders would fight (a replica the operator promoted is
// turned back into a replica by every sentinel that still sees the old master sane, and a
// master that reports itself a replica is soon failed over by them). What the machine does:
//
//   - it records what the sentinels decided: a majority of the sentinels that run naming one
//     address with one config epoch newer than the recorded one, and the node at that address
//     answering as a primary, is a failover Sentinel made (sentinel-promoted, with the
//     epoch in ShardRecord.ClaimEpoch); a sentinel reporting a failover in progress, or a
//     majority naming an address that does not answer as a primary yet, is one under way
//     (sentinel-failover: Steady -> FailingOver);
//   - it converges the data nodes (replicas re-pointed, strays fenced then demoted, the
//     primary opened) only while no sentinel that answers names another primary or reports a
//     failover: what it would re-point is what the sentinels are moving;
//   - it fences a primary that is neither recorded nor named by a sentinel with a newer epoch
//     at any time: a partitioned old primary then stops taking writes as soon as the operator
//     reaches it, where Sentinel alone leaves it open until min-replicas-max-lag.
//
// Planned hand-overs go through SENTINEL FAILOVER in this topology (sentinelhandover.go): a
// requested switchover, a rollout's, a scale-down's and a deleted primary pod's. Restores,
// hibernation and password rotations are not built yet: the rules that start them do not fire
// here (sentinelEvents) and the spec's requests for them wait, said why.

// movesNoRole are the rules of work that moves no primary role, which apply in the Sentinel
// topology at any time: password rotation, certificates, the replication history Valkey
// renames, the resync of a pod a taken-over failover deposed.
var movesNoRole = []Event{
	EventHistoryRenamed, EventDeposedResync, EventDeposedResynced, EventRotationRequested, EventPasswordsAccepted,
	EventGraceClockRestarted, EventGraceEnded, EventRotationComplete, EventCertificateReloaded,
}

// sentinelEvents are the rules of the table that apply in the Sentinel topology: the
// bootstrap (the machine chooses the first primary before any sentinel monitors it), the
// recording of the sentinels' failovers (and of a history a primary takes back), the start of
// a failover the machine takes over (sentineltakeover.go), the planned hand-overs (a requested
// switchover, a leaving primary's, a scale-down's and a rollout's, each carried out by a
// sentinel: sentinelhandover.go) and their ends, the rollout and the replica count, and
// movesNoRole. A rollout hands its primary over from Rolling to FailingOver (roll-hand-over)
// rather than within Rolling as the other topologies do: the sentinels decide every change of
// primary here, and FailingOver is where their pick is recorded; the rollout resumes from
// Steady with the pods still on another revision.
var sentinelEvents = eventSet(movesNoRole,
	EventBootstrapElected, EventBootstrapComplete, EventHistoryTakenBack, EventSentinelPromoted, EventSentinelFailover,
	EventSentinelKeptPrimary, EventPrimaryReadmitted, EventSentinelEpochReset, EventSentinelTakeOver, EventSentinelClockReset,
	EventSwitchoverRequested, EventSwitchoverStale, EventPrimaryLeaving, EventRolloutNeeded, EventRollHandOver, EventRolloutComplete,
	EventSpecChanged, EventReplicasChanged, EventScaleDownHandOver)

// takenOverEvents are the rules of a failover the machine took over in the Sentinel topology
// (Election.TakenOver): the Replication topology's failover rules, and movesNoRole.
var takenOverEvents = eventSet(movesNoRole,
	EventFailoverComplete, EventPrimaryRecovered, EventPrimaryLost, EventCandidatePromoted, EventFenceClockRestarted,
	EventCandidateElected)

func eventSet(base []Event, more ...Event) map[Event]bool {
	out := map[Event]bool{}
	for _, e := range append(append([]Event(nil), base...), more...) {
		out[e] = true
	}
	return out
}

// applies reports whether rule r may fire for this cluster: the Sentinel topology takes only
// sentinelEvents, or takenOverEvents during a failover the machine took over; the sentinel
// rules apply to it alone.
func (d *decider) applies(r *rule) bool {
	if d.v.spec.Mode == ModeSentinel {
		if d.p.State == FailingOver && d.p.Op.Election.TakenOver {
			return takenOverEvents[r.event]
		}
		return sentinelEvents[r.event]
	}
	switch r.event {
	case EventSentinelPromoted, EventSentinelFailover, EventSentinelKeptPrimary, EventPrimaryReadmitted, EventSentinelEpochReset, EventSentinelTakeOver,
		EventSentinelClockReset, EventRollHandOver:
		return false
	}
	return true
}

// sentinelChoice is a primary a majority of the sentinels that run name, with the config epoch
// they name it under and how many do.
type sentinelChoice struct {
	IP    string
	Epoch uint64
	Votes int
}

// sentinelChoice finds the address and config epoch a majority of the sentinels (of those that
// run or of those observed, whichever is more: not of those that answer, so that two halves of
// a partition cannot both have one) name for the primary, among those that answer and monitor
// the group; of two that reach it (more sentinels observed than run, during a scale-down) the
// higher epoch. None without sentinels in the spec.
func (d *decider) sentinelChoice() (sentinelChoice, bool) {
	if d.sentinelsRun() <= 0 {
		return sentinelChoice{}, false
	}
	need := d.sentinelMajority()
	var counts []sentinelChoice
	for _, s := range d.obs.Sentinels {
		if !s.Reachable || !s.Monitoring || s.PrimaryIP == "" {
			continue
		}
		found := false
		for i := range counts {
			if counts[i].IP == s.PrimaryIP && counts[i].Epoch == s.ConfigEpoch {
				counts[i].Votes++
				found = true
			}
		}
		if !found {
			counts = append(counts, sentinelChoice{IP: s.PrimaryIP, Epoch: s.ConfigEpoch, Votes: 1})
		}
	}
	var best sentinelChoice
	found := false
	for _, c := range counts {
		if c.Votes >= need && (!found || c.Epoch > best.Epoch) {
			best, found = c, true
		}
	}
	return best, found
}

// sentinelMajority is how many sentinels make a majority: of those that run (sentinelsRun), or
// of those observed when there are more.
func (d *decider) sentinelMajority() int {
	return max(d.sentinelsRun(), len(d.obs.Sentinels))/2 + 1
}

// sentinelsAgree reports whether a majority of the sentinels name the recorded primary, prim,
// under the recorded epoch: only then does the machine move replicas, what the sentinels
// would otherwise be moving.
func (d *decider) sentinelsAgree(rec ShardRecord, prim *Node) bool {
	c, ok := d.sentinelChoice()
	return ok && prim != nil && c.IP == prim.Pod.IP && c.Epoch == rec.ClaimEpoch
}

// sentinelsFailingOver names the sentinels that answer and report a failover of the group in
// progress or the primary they name objectively down, sorted.
func (d *decider) sentinelsFailingOver() []string {
	return d.sentinelsReporting(func(s Sentinel) bool { return s.FailingOver || s.PrimaryDown })
}

// sentinelsStartingOver names the sentinels that answer and report a failover other than the
// one that chose rec's primary: the leader of that one still reports it in progress (and the
// old primary down: its flags are the group's master entry's, which it switches only at the
// end) while it reconfigures the replicas, naming the recorded primary under the recorded
// epoch while that answers as a primary.
func (d *decider) sentinelsStartingOver(rec ShardRecord) []string {
	ip := ""
	if prim := d.v.node(rec.Primary); alive(prim, rec.RunID) && prim.Valkey.Role == RolePrimary {
		ip = prim.Pod.IP
	}
	return d.sentinelsReporting(func(s Sentinel) bool {
		finishing := ip != "" && rec.ClaimEpoch > 0 && s.ConfigEpoch == rec.ClaimEpoch && s.PrimaryIP == ip
		return (s.PrimaryDown || s.FailingOver) && !finishing
	})
}

// sentinelsInProgress names the sentinels that answer and lead a failover (failover_in_progress).
func (d *decider) sentinelsInProgress() []string {
	return d.sentinelsReporting(func(s Sentinel) bool { return s.FailingOver })
}

func (d *decider) sentinelsReporting(what func(Sentinel) bool) []string {
	var out []string
	for _, s := range d.obs.Sentinels {
		if s.Reachable && s.Monitoring && what(s) {
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// nodeAt finds the node whose pod has address ip (nil: none).
func (d *decider) nodeAt(ip string) *Node {
	if ip == "" {
		return nil
	}
	for _, n := range d.v.nodes {
		if n.Pod.Exists && n.Pod.IP == ip {
			return n
		}
	}
	return nil
}

// sentinelPrimary is the node the sentinels chose, when their choice is not the record (another
// address, or another config epoch: the sentinels' epochs restart when they lose their files)
// and it answers as a primary.
func (d *decider) sentinelPrimary(rec ShardRecord) (*Node, sentinelChoice, bool) {
	c, ok := d.sentinelChoice()
	if !ok {
		return nil, c, false
	}
	n := d.nodeAt(c.IP)
	if prim := d.v.node(rec.Primary); c.Epoch == rec.ClaimEpoch && prim != nil && n == prim {
		return nil, c, false // the record
	}
	if n == nil || !usable(n) || n.Valkey.Role != RolePrimary {
		return nil, c, false
	}
	return n, c, true
}

// guardSentinelPrimaryRecorded: a majority of the sentinels name a primary other than the
// record (sentinelPrimary), and either Sentinel's promotion opened it to writes already, or it
// holds the data of every node that holds any (sentinelPickLacks): record it, with the epoch.
// A fenced pick that lacks data stays unrecorded, so the record's history still places that
// data, and the waits say so (WaitSentinelPickLacksData).
func guardSentinelPrimaryRecorded(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	n, c, ok := d.sentinelPrimary(rec)
	if !ok || (closed(n) && d.sentinelPickLacks(rec, n) != "") {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	next.Shards = recordPrimary(p.Shards, 0, n)
	next.Shards[0].ClaimEpoch = c.Epoch
	msg := fmt.Sprintf("%d of %d sentinels name %s the primary under config epoch %d (recorded: %s, epoch %d)", c.Votes, d.sentinelsRun(), n.Name, c.Epoch, rec.Primary, rec.ClaimEpoch)
	if op := p.Op; op.Election.Planned && op.Switchover.To != "" {
		what := "the requested hand-over to " + op.Switchover.To
		switch goalOf(op) {
		case GoalLeaving:
			what = fmt.Sprintf("the hand-over to %s before %s's pod stops", op.Switchover.To, op.Election.Lost)
		case GoalScaleDown:
			what = fmt.Sprintf("the hand-over to %s for the scale-down to %d pod(s)", op.Switchover.To, op.Switchover.Pods)
		case GoalRollout:
			what = fmt.Sprintf("the hand-over to %s before %s is rolled", op.Switchover.To, op.Election.Lost)
		}
		if op.Switchover.To == n.Name {
			msg += "; " + what
		} else {
			msg += "; the sentinels chose it over " + what
		}
	}
	return outcome{next: next, message: msg}, true
}

// closed reports whether n is closed to client writes or to replicas (one of its fences is on).
func closed(n *Node) bool { return n.Valkey.WritesFenced || n.Valkey.SyncFenced }

// linkedTo reports whether n, another node than prim, answers and follows prim with its link
// up: a replica that holds prim's data.
func linkedTo(n, prim *Node) bool {
	return n != prim && usable(n) && follows(n, prim) && n.Valkey.LinkUp
}

// guardSentinelFailover: a sentinel that answers reports a failover other than the one that
// chose the recorded primary, or a majority name a primary other than the record that does not
// answer as a primary yet: record that Sentinel is failing over from the recorded primary.
func guardSentinelFailover(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	var msg string
	if who := d.sentinelsStartingOver(rec); len(who) > 0 {
		msg = fmt.Sprintf("sentinel(s) %s report a failover of %s's group", strings.Join(who, ", "), rec.Primary)
	} else if c, ok := d.sentinelChoice(); ok && !d.sentinelsAgree(rec, d.v.node(rec.Primary)) {
		msg = fmt.Sprintf("%d of %d sentinels name %s under config epoch %d, not the recorded primary %s (epoch %d)", c.Votes, d.sentinelsRun(), c.IP, c.Epoch, rec.Primary, rec.ClaimEpoch)
	} else if health, fault := d.primaryHealth(p, 0); health == primarySuspected || health == primaryGone {
		// Recorded so that the take-over can tell how long the sentinels have had
		// (sentinelsGaveUp): sentinels that cannot see each other never report it down.
		msg = fmt.Sprintf("%s is lost (%s); the sentinels decide the failover", rec.Primary, fault)
	} else {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{Election: Election{Shard: 0, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History}}
	return outcome{next: next, message: msg}, true
}

// guardSentinelFailoverAbandoned: no sentinel that answers reports a failover any more, the
// recorded primary answers as the recorded process, a primary, and a majority name it under
// the recorded epoch, or every sentinel answers and none that monitors the group names
// another (the others monitor nothing: they were not told it yet, or lost their files, and
// are told it in Steady): the sentinels kept it (a failover aborted, a down flag that
// cleared, a primary lost for a while and back).
func guardSentinelFailoverAbandoned(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 || p.Op.Election.TakenOver || p.Op.Election.Planned || len(d.sentinelsFailingOver()) > 0 {
		// A planned hand-over ends when a sentinel's failover is recorded, or by
		// switchover-stale.
		return outcome{}, false
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	if !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	if c, _ := d.sentinelChoice(); d.sentinelsAgree(rec, prim) {
		return outcome{next: next, message: fmt.Sprintf("%d of %d sentinels keep %s the primary under config epoch %d", c.Votes, d.sentinelsRun(), rec.Primary, c.Epoch)}, true
	}
	if atRecord, _, unmonitored, ok := d.sentinelsAtRecord(rec, prim); ok && d.sentinelsAllAnswer() {
		return outcome{next: next, message: fmt.Sprintf("%s answers again as the primary; of the %d sentinels, %d name it and %d monitor no group (they are told it)", rec.Primary, len(d.obs.Sentinels), atRecord, len(unmonitored))}, true
	}
	return outcome{}, false
}

// sentinelConverge is converge's part in the Sentinel topology, before the rest of it: it
// reports whether the shard must not be converged now, after adding what may be done
// meanwhile. The rest of converge (replicas re-pointed, strays fenced and demoted, the primary
// opened) runs only while a majority of the sentinels name the recorded primary under the
// recorded epoch and none leads a failover: otherwise what it would move, the sentinels are
// moving, or may be (a minority that answers says nothing of what the others decided).
func (d *decider) sentinelConverge(p Persisted, s int, b *actionList) bool {
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	d.sentinelMonitors(p, s, b)
	d.sentinelResets(p, s, b)
	d.releaseHeld(b)
	inProgress, failing, agree := d.sentinelsInProgress(), d.sentinelsFailingOver(), d.sentinelsAgree(rec, prim)
	var why Wait
	switch {
	case alive(prim, rec.RunID) && prim.Valkey.Role == RoleReplica && prim.Valkey.PrimaryHost == "" && agree && len(inProgress) == 0:
		// Re-admitted (primary-readmitted): the sentinels' own master, a replica of
		// nothing since its restart.
		b.add(Promote{Target: TargetOf(s, prim)})
		return true
	case !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary:
		why = d.sentinelsDecideWait(p, rec, b)
	case len(inProgress) > 0 && agree:
		why = Wait{Kind: WaitSentinelsReconfiguring, Shard: s, Node: rec.Primary, Detail: strings.Join(inProgress, ", ")}
	case len(failing) > 0:
		why = Wait{Kind: WaitSentinelsDisagree, Shard: s, Node: rec.Primary, Detail: "sentinel(s) " + strings.Join(failing, ", ") + " report a failover in progress"}
	case !agree:
		why = Wait{Kind: WaitSentinelsDisagree, Shard: s, Node: rec.Primary, Detail: d.sentinelsSay()}
	default:
		// A replica linked to the recorded primary holds its data: it is made a sync source,
		// so that the node Sentinel promotes among them serves its replicas without the
		// operator. That also opens an old primary a hand-over closed (releaseHeld gives
		// the replicas it held back their priority).
		for _, n := range d.v.shard(s) {
			if linkedTo(n, prim) && closed(n) {
				b.add(OpenWrites{Target: TargetOf(s, n)})
			}
		}
		return false
	}
	d.fenceUnnamedPrimaries(rec, prim, b)
	b.wait(why)
	return true
}

// sentinelsDecideWait is the wait while the recorded primary does not answer as a primary:
// the sentinels decide, unless the primary they chose is fenced and lacks data (then it
// stays closed, and the wait says so), or none of them can (then the machine removes the
// group from those that monitor it, adding the actions to b, and takes the failover over;
// sentineltakeover.go).
func (d *decider) sentinelsDecideWait(p Persisted, rec ShardRecord, b *actionList) Wait {
	if rm := d.sentinelsToRemove(p); len(rm) > 0 {
		var names []string
		for _, s := range rm {
			b.add(SentinelRemove{SentinelTarget: SentinelTargetOf(s)})
			names = append(names, s.Name)
		}
		why := fmt.Sprintf("fewer than the quorum (%d) of the sentinels monitor the group", d.sentinelQuorum())
		if len(rm) >= d.sentinelQuorum() {
			why = "their failover has run twice failover-timeout without a primary the operator may record"
		}
		return Wait{Kind: WaitSentinelTakeOver, Shard: 0, Node: rec.Primary, Detail: why, Peer: strings.Join(names, ", ")}
	}
	if n, _, ok := d.sentinelPrimary(rec); ok && closed(n) {
		if lacks := d.sentinelPickLacks(rec, n); lacks != "" {
			// Closed to replicas too: the sentinels re-point every replica at their pick,
			// and one that holds what the pick lacks would resync from it and lose it. A
			// pick with only its client writes closed (a primary not opened yet, or one a
			// hand-over closed) still serves replicas.
			if !n.Valkey.SyncFenced {
				b.add(Fence{Target: TargetOf(0, n)})
			}
			return Wait{Kind: WaitSentinelPickLacksData, Shard: 0, Node: n.Name, Detail: lacks}
		}
	}
	if d.sentinelsCannotAct() {
		// The take-over waits for what the Replication topology's failover waits for.
		_, failover, _ := d.failoverOf(p, 0, nil)
		return failover.wait(WaitFailover, rec.Primary)
	}
	return Wait{Kind: WaitSentinelsDecide, Shard: 0, Node: rec.Primary, Detail: d.sentinelsSay()}
}

// fenceUnnamedPrimaries fences every node of the shard that takes writes while it is neither
// the recorded primary nor named by a majority of the sentinels or by one under a config
// epoch newer than the recorded one: an old primary cut off from the sentinels but not from
// the operator then stops taking writes, rather than after min-replicas-max-lag. The recorded
// primary too once a majority names another node under a newer epoch: the sentinels replaced
// it, and the writes it takes are the ones their choice drops; fenced whole, its
// replica-priority 0 also keeps their next failover (their pick gone, say) from picking it
// over a replica that holds what their pick acknowledged (found by the exploration, seed 16618
// of the sentinel preset: a write acknowledged by Sentinel's pick, lost when the sentinels
// then picked the replaced primary, open all along). While a
// sentinel leads a failover its pick is a primary before any sentinel names it (the leader
// names it only once the pick's INFO says so), so nothing is fenced then, unless the recorded
// primary answers as one with a majority naming it under the recorded epoch: the failover may
// be the one that chose it, still reconfiguring the replicas, or a new one of it, whose pick
// can only be a replica of it and so continues its history. A primary that does not (the one
// Sentinel just replaced, writable again) is fenced: left open, it took WAIT-acknowledged
// writes until a restart of the new primary ended Sentinel's overlap (found by the
// exploration, seed 3795 of the sentinel preset).
func (d *decider) fenceUnnamedPrimaries(rec ShardRecord, prim *Node, b *actionList) {
	inProgress := len(d.sentinelsInProgress()) > 0
	settled := alive(prim, rec.RunID) && prim.Valkey.Role == RolePrimary && d.sentinelsAgree(rec, prim)
	if inProgress && !settled {
		return
	}
	named := map[string]bool{}
	replaced := false
	if c, ok := d.sentinelChoice(); ok {
		named[c.IP] = true
		replaced = prim != nil && c.Epoch > rec.ClaimEpoch && c.IP != prim.Pod.IP
	}
	for _, s := range d.obs.Sentinels {
		if s.Reachable && s.Monitoring && s.ConfigEpoch > rec.ClaimEpoch {
			named[s.PrimaryIP] = true
		}
	}
	for _, n := range d.v.shard(0) {
		if (n == prim && !replaced) || !usable(n) || n.Valkey.Role != RolePrimary || named[n.Pod.IP] {
			continue
		}
		if n != prim && inProgress && (n.Valkey.ReplID == prim.Valkey.ReplID || n.Valkey.ReplID2 == prim.Valkey.ReplID) {
			continue // may be the pick of a new failover
		}
		if !n.Valkey.WritesFenced || !n.Valkey.SyncFenced {
			b.add(Fence{Target: TargetOf(0, n)})
		}
	}
}

// sentinelsSay is what the sentinels that answer say, for the waits: how many answer the
// operator and monitor the group, which primary a majority names, and which report a failover.
func (d *decider) sentinelsSay() string {
	answering, monitoring := 0, 0
	for _, s := range d.obs.Sentinels {
		if s.Reachable {
			answering++
			if s.Monitoring {
				monitoring++
			}
		}
	}
	parts := []string{fmt.Sprintf("%d of %d sentinels answer the operator, %d monitor the primary", answering, d.sentinelsRun(), monitoring)}
	if c, ok := d.sentinelChoice(); ok {
		name := c.IP
		if n := d.nodeAt(c.IP); n != nil {
			name = n.Name + " (" + c.IP + ")"
		}
		parts = append(parts, fmt.Sprintf("%d name %s under config epoch %d", c.Votes, name, c.Epoch))
	} else {
		parts = append(parts, fmt.Sprintf("no majority (%d) names one primary", d.sentinelMajority()))
	}
	if who := d.sentinelsFailingOver(); len(who) > 0 {
		parts = append(parts, "failing over: "+strings.Join(who, ", "))
	}
	return strings.Join(parts, "; ")
}

// sentinelFailoverActions are FailingOver's actions in the Sentinel topology: the objects, and
// the wait for the sentinels to agree on a primary that answers (or why their pick stays
// closed).
func (d *decider) sentinelFailoverActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	if len(p.Shards) == 0 {
		return
	}
	if !p.Op.Election.Planned || d.handOverPicked(p) {
		d.releaseHeld(b)
	}
	rec := p.Shards[0]
	d.fenceUnnamedPrimaries(rec, d.v.node(rec.Primary), b)
	if w := d.sentinelsDecideWait(p, rec, b); w.Kind != WaitSentinelsDecide {
		b.wait(w)
		return
	}
	detail := d.sentinelsSay()
	if why := d.takeOverHeldBack(p); why != "" {
		detail += "; their failover has run twice failover-timeout, and the operator does not take it over: " + why
	}
	b.wait(Wait{Kind: WaitSentinelFailover, Detail: detail})
}

// sentinelNotBuilt says which of the spec's requests the Sentinel topology does not carry out
// yet ("" when none): each needs sentinels told again after their pods' addresses change, or
// new passwords on the sentinels too.
func (d *decider) sentinelNotBuilt(p Persisted) string {
	spec := d.v.spec
	var asked []string
	if spec.Restore != nil && spec.Restore.ID != p.Restored {
		asked = append(asked, "a restore")
	}
	if spec.Hibernate {
		asked = append(asked, "hibernation")
	}
	if r := spec.Rotation; r != nil && r.ID != "" && r.ID != p.Rotated && p.Rotation.ID == "" {
		asked = append(asked, "a password rotation")
	}
	if len(asked) == 0 {
		return ""
	}
	return strings.Join(asked, ", ")
}

// sentinelPickLacks says why pick, a node the sentinels chose or re-admit as the primary,
// must not be opened while it is fenced ("" when it may be): nodes that answer hold data it is
// not known to hold (judged in the lineage of rec, the record before the sentinels' choice;
// a node whose data the lineage cannot place counts), or too few of the shard's nodes are
// seen to know (the failover quorum). Opened, it would take writes as the shard's newest data,
// and the replicas pointed at it would sync from it and lose theirs: a node that restarted
// without its data is promoted when the sentinels find no better replica they may use.
func (d *decider) sentinelPickLacks(rec ShardRecord, pick *Node) string {
	op := Operation{Election: Election{Shard: 0, Lost: rec.Primary, LostRunID: rec.RunID, Writer: rec.Primary, LostHistory: rec.History}}
	if ok, why := d.quorum(op); !ok {
		return why
	}
	l, cands := d.candidates(op)
	var self *candidate
	for i := range cands {
		if cands[i].Node == pick {
			self = &cands[i]
		}
	}
	var richer []string
	for _, n := range d.v.shard(0) {
		if n == pick || !usable(n) || n.Valkey.empty() {
			continue
		}
		i := slices.IndexFunc(cands, func(c candidate) bool { return c.Node == n })
		if i < 0 || self == nil || !l.holds(*self, cands[i]) {
			richer = append(richer, fmt.Sprintf("%s (%d keys)", n.Name, n.Valkey.Keys))
		}
	}
	if len(richer) == 0 {
		return ""
	}
	return strings.Join(richer, ", ") + " hold data it lacks"
}

// sentinelRicher is converge's check before it opens the recorded primary, still fenced, in
// the Sentinel topology (sentinelPickLacks; "" outside it and at the bootstrap, which opens
// the node it chose itself).
func (d *decider) sentinelRicher(p Persisted, s int, prim *Node) string {
	if d.v.spec.Mode != ModeSentinel || len(d.p.Shards) <= s {
		return ""
	}
	return d.sentinelPickLacks(p.Shards[s], prim)
}

// readmissible finds the recorded primary's pod answering as a new process at the address a
// majority of the sentinels name under the recorded epoch, following nothing, holding the data
// of every node of the shard that holds any (sentinelPickLacks), while no sentinel leads a
// failover: the sentinels' own master, restarted. The sentinels cannot promote it (it is their
// master) and may have no replica to promote instead (every other node lost its data too, or
// came back on an address they do not know), so the machine re-admits it: recorded as the new
// process, promoted in place when it came back a replica of nothing, then opened. No sentinel
// is contradicted: it is the node they name, and none is moving the role. One that holds less
// than another node does not qualify: the sentinels fail it over to a replica with the data (a
// master that reports itself a replica is failed over).
func (d *decider) readmissible(p Persisted) (*Node, bool) {
	if len(p.Shards) == 0 || len(d.sentinelsInProgress()) > 0 {
		return nil, false
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	if !usable(prim) || prim.Valkey.RunID == rec.RunID || (prim.Valkey.Role == RoleReplica && prim.Valkey.PrimaryHost != "") {
		return nil, false
	}
	if !d.sentinelsAgree(rec, prim) {
		return nil, false
	}
	for _, n := range d.v.shard(0) {
		if n != prim && usable(n) && n.Valkey.Role == RolePrimary {
			return nil, false // another primary: the sentinels' business
		}
	}
	if d.sentinelPickLacks(rec, prim) != "" {
		return nil, false
	}
	return prim, true
}

// guardSentinelPrimaryReadmitted: the sentinels' master, the recorded primary's pod, answers
// as a new process holding the shard's data (readmissible): record the new process, before it
// is promoted in place and opened.
func guardSentinelPrimaryReadmitted(d *decider) (outcome, bool) {
	prim, ok := d.readmissible(d.p)
	if !ok {
		return outcome{}, false
	}
	next := d.p
	next.Op = Operation{}
	epoch := d.p.Shards[0].ClaimEpoch
	next.Shards = recordPrimary(d.p.Shards, 0, prim)
	next.Shards[0].ClaimEpoch = epoch
	msg := fmt.Sprintf("%s, the primary the sentinels name, restarted (%s) and holds the data of every node of the shard that holds any: re-admitted in place", prim.Name, short(prim.Valkey.RunID))
	return outcome{next: next, message: msg}, true
}
