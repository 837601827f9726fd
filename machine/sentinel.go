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
//   - it records what the sentinels decided: a majority of the spec's sentinels naming one
//     address with one config epoch newer than the recorded one, and the node at that address
//     answering as a primary, is a failover Sentinel made (sentinel-primary-recorded, with the
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
// Planned hand-overs (rollouts, switchovers, scale-downs, deletions of the primary's pod) go
// through SENTINEL FAILOVER in this topology; they are not built yet, so the rules that start
// them do not fire here (sentinelRules) and the spec's requests for them wait, said why.

// sentinelEvents are the rules of the table that apply in the Sentinel topology: the
// bootstrap (the machine chooses the first primary before any sentinel monitors it), the
// recording of the sentinels' failovers, and the work that moves no primary role (password
// rotation, certificates, the replication history Valkey renames or a primary takes back).
var sentinelEvents = map[Event]bool{
	EventBootstrapElected:          true,
	EventBootstrapComplete:         true,
	EventHistoryRenamed:            true,
	EventHistoryTakenBack:          true,
	EventSentinelPrimaryRecorded:   true,
	EventSentinelFailover:          true,
	EventSentinelFailoverAbandoned: true,
	EventSentinelPrimaryReadmitted: true,
	EventRotationRequested:         true,
	EventPasswordsAccepted:         true,
	EventGraceClockRestarted:       true,
	EventGraceEnded:                true,
	EventRotationComplete:          true,
	EventCertificateReloaded:       true,
}

// appliesInMode reports whether rule r may fire for a cluster of mode m: the Sentinel
// topology takes only sentinelEvents, and the sentinel rules apply to it alone.
func appliesInMode(r *rule, m Mode) bool {
	if m == ModeSentinel {
		return sentinelEvents[r.event]
	}
	switch r.event {
	case EventSentinelPrimaryRecorded, EventSentinelFailover, EventSentinelFailoverAbandoned, EventSentinelPrimaryReadmitted:
		return false
	}
	return true
}

// sentinelChoice is a primary a majority of the spec's sentinels name, with the config epoch
// they name it under and how many do.
type sentinelChoice struct {
	IP    string
	Epoch uint64
	Votes int
}

// sentinelChoice finds the address and config epoch a majority of the spec's sentinels (not
// of those that answer: two halves of a partition must not both have one) name for the
// primary, among those that answer and monitor the group.
func (d *decider) sentinelChoice() (sentinelChoice, bool) {
	need := d.v.spec.Sentinels/2 + 1
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
	for _, c := range counts {
		if c.Votes >= need {
			return c, true
		}
	}
	return sentinelChoice{}, false
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
// epoch.
func (d *decider) sentinelsStartingOver(rec ShardRecord) []string {
	ip := ""
	if prim := d.v.node(rec.Primary); prim != nil {
		ip = prim.Pod.IP
	}
	return d.sentinelsReporting(func(s Sentinel) bool {
		finishing := rec.ClaimEpoch > 0 && s.ConfigEpoch == rec.ClaimEpoch && s.PrimaryIP == ip
		return (s.PrimaryDown || s.FailingOver) && !finishing
	})
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

// sentinelsNamingOther lists the sentinels that answer and name another primary than ip, each
// with the address and epoch it names, sorted.
func (d *decider) sentinelsNamingOther(ip string) []string {
	var out []string
	for _, s := range d.obs.Sentinels {
		if s.Reachable && s.Monitoring && s.PrimaryIP != ip {
			out = append(out, fmt.Sprintf("%s names %s (config epoch %d)", s.Name, s.PrimaryIP, s.ConfigEpoch))
		}
	}
	sort.Strings(out)
	return out
}

// sentinelsName reports whether a majority of the sentinels name n the primary.
func (d *decider) sentinelsName(n *Node) bool {
	c, ok := d.sentinelChoice()
	return ok && c.IP == n.Pod.IP
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

// sentinelPrimary is the node the sentinels chose under a config epoch newer than the
// recorded one, when it answers as a primary.
func (d *decider) sentinelPrimary(rec ShardRecord) (*Node, sentinelChoice, bool) {
	c, ok := d.sentinelChoice()
	if !ok || c.Epoch <= rec.ClaimEpoch {
		return nil, c, false
	}
	n := d.nodeAt(c.IP)
	if n == nil || !usable(n) || n.Valkey.Role != RolePrimary {
		return nil, c, false
	}
	return n, c, true
}

// guardSentinelPrimaryRecorded: a majority of the sentinels name a primary under a config
// epoch newer than the recorded one, and it answers as a primary: record it, with the epoch.
func guardSentinelPrimaryRecorded(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	n, c, ok := d.sentinelPrimary(rec)
	if !ok {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	next.Shards = recordPrimary(p.Shards, 0, n)
	next.Shards[0].ClaimEpoch = c.Epoch
	msg := fmt.Sprintf("%d of %d sentinels name %s the primary under config epoch %d (recorded: %s, epoch %d)", c.Votes, d.v.spec.Sentinels, n.Name, c.Epoch, rec.Primary, rec.ClaimEpoch)
	return outcome{next: next, message: msg}, true
}

// guardSentinelFailover: a sentinel that answers reports a failover of the group in progress,
// or a majority name under a newer config epoch a node that does not answer as a primary yet:
// record that Sentinel is failing over from the recorded primary.
func guardSentinelFailover(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	var msg string
	if who := d.sentinelsStartingOver(rec); len(who) > 0 {
		msg = fmt.Sprintf("sentinel(s) %s report a failover of %s's group", strings.Join(who, ", "), rec.Primary)
	} else if c, ok := d.sentinelChoice(); ok && c.Epoch > rec.ClaimEpoch {
		msg = fmt.Sprintf("%d of %d sentinels name %s under config epoch %d, which does not answer as a primary yet", c.Votes, d.v.spec.Sentinels, c.IP, c.Epoch)
	} else {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{Election: Election{Shard: 0, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History}}
	return outcome{next: next, message: msg}, true
}

// guardSentinelFailoverAbandoned: no sentinel that answers reports a failover any more, a
// majority name the recorded primary under the recorded epoch, and it answers as the recorded
// process, a primary: the sentinels kept it (a failover aborted, or a down flag that cleared).
func guardSentinelFailoverAbandoned(d *decider) (outcome, bool) {
	p := d.p
	if len(p.Shards) == 0 || len(d.sentinelsFailingOver()) > 0 {
		return outcome{}, false
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	c, ok := d.sentinelChoice()
	if !ok || c.Epoch != rec.ClaimEpoch || !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary || c.IP != prim.Pod.IP {
		return outcome{}, false
	}
	next := p
	next.Op = Operation{}
	msg := fmt.Sprintf("%d of %d sentinels keep %s the primary under config epoch %d", c.Votes, d.v.spec.Sentinels, rec.Primary, c.Epoch)
	return outcome{next: next, message: msg}, true
}

// sentinelConverge is converge's part in the Sentinel topology, before the rest of it: it
// reports whether the shard must not be converged now (the sentinels decide, or say another
// primary than the record), after adding what may be done meanwhile.
func (d *decider) sentinelConverge(p Persisted, s int, b *actionList) bool {
	rec := p.Shards[s]
	prim := d.v.node(rec.Primary)
	var why Wait
	switch {
	case alive(prim, rec.RunID) && prim.Valkey.Role == RoleReplica && prim.Valkey.PrimaryHost == "" && d.sentinelsName(prim):
		// Re-admitted (sentinel-primary-readmitted): the sentinels' own master, a replica of
		// nothing since its restart.
		b.add(Promote{Target: TargetOf(s, prim)})
		return true
	case !alive(prim, rec.RunID) || prim.Valkey.Role != RolePrimary:
		why = Wait{Kind: WaitSentinelsDecide, Shard: s, Node: rec.Primary, Detail: d.sentinelsSay()}
	case len(d.sentinelsFailingOver()) > 0:
		why = Wait{Kind: WaitSentinelsDisagree, Shard: s, Node: rec.Primary, Detail: "sentinel(s) " + strings.Join(d.sentinelsFailingOver(), ", ") + " report a failover in progress"}
	case len(d.sentinelsNamingOther(prim.Pod.IP)) > 0:
		why = Wait{Kind: WaitSentinelsDisagree, Shard: s, Node: rec.Primary, Detail: strings.Join(d.sentinelsNamingOther(prim.Pod.IP), "; ")}
	default:
		// The rest of converge fences the strays and re-points the replicas. A replica
		// linked to the recorded primary holds its data: it is made a sync source, so that
		// the node Sentinel promotes among them serves its replicas without the operator.
		for _, n := range d.v.shard(s) {
			if n != prim && usable(n) && follows(n, prim) && n.Valkey.LinkUp && n.Valkey.SyncFenced {
				b.add(OpenWrites{Target: TargetOf(s, n)})
			}
		}
		return false
	}
	d.fenceUnnamedPrimaries(rec, prim, b)
	b.wait(why)
	return true
}

// fenceUnnamedPrimaries fences every node of the shard that takes writes while it is neither
// the recorded primary nor named by a sentinel under a config epoch newer than the recorded
// one: an old primary the sentinels replaced, cut off from them but not from the operator,
// stops taking writes then, rather than after min-replicas-max-lag.
func (d *decider) fenceUnnamedPrimaries(rec ShardRecord, prim *Node, b *actionList) {
	named := map[string]bool{}
	for _, s := range d.obs.Sentinels {
		if s.Reachable && s.Monitoring && s.ConfigEpoch > rec.ClaimEpoch {
			named[s.PrimaryIP] = true
		}
	}
	for _, n := range d.v.shard(0) {
		if n == prim || !usable(n) || n.Valkey.Role != RolePrimary || named[n.Pod.IP] {
			continue
		}
		if !n.Valkey.WritesFenced || !n.Valkey.SyncFenced {
			b.add(Fence{Target: TargetOf(0, n)})
		}
	}
}

// sentinelsSay is what the sentinels that answer say, for the waits: how many monitor the
// group, which primary a majority names, and which report a failover.
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
	parts := []string{fmt.Sprintf("%d of %d sentinels answer, %d monitor the primary", answering, d.v.spec.Sentinels, monitoring)}
	if c, ok := d.sentinelChoice(); ok {
		name := c.IP
		if n := d.nodeAt(c.IP); n != nil {
			name = n.Name + " (" + c.IP + ")"
		}
		parts = append(parts, fmt.Sprintf("%d name %s under config epoch %d", c.Votes, name, c.Epoch))
	} else {
		parts = append(parts, fmt.Sprintf("no majority (%d) names one primary", d.v.spec.Sentinels/2+1))
	}
	if who := d.sentinelsFailingOver(); len(who) > 0 {
		parts = append(parts, "failing over: "+strings.Join(who, ", "))
	}
	return strings.Join(parts, "; ")
}

// sentinelFailoverActions are FailingOver's actions in the Sentinel topology: the objects, and
// the wait for the sentinels to agree on a primary that answers.
func (d *decider) sentinelFailoverActions(p Persisted, b *actionList) {
	d.ensureObjects(p, len(p.Shards), b)
	if len(p.Shards) > 0 {
		d.fenceUnnamedPrimaries(p.Shards[0], d.v.node(p.Shards[0].Primary), b)
	}
	b.wait(Wait{Kind: WaitSentinelFailover, Detail: d.sentinelsSay()})
}

// sentinelNotBuilt says which of the spec's requests the Sentinel topology does not carry out
// yet ("" when none): each needs a hand-over through SENTINEL FAILOVER, or sentinels told
// again after their pods' addresses change.
func (d *decider) sentinelNotBuilt(p Persisted) string {
	spec := d.v.spec
	var asked []string
	if spec.Switchover != nil {
		asked = append(asked, "a switchover")
	}
	if d.specPods() != d.targetPods(p) {
		asked = append(asked, "another replica count")
	}
	if d.staleRevision(spec.Revision) != nil {
		asked = append(asked, "a rollout")
	}
	if spec.Restore != nil && spec.Restore.ID != p.Restored {
		asked = append(asked, "a restore")
	}
	if spec.Hibernate {
		asked = append(asked, "hibernation")
	}
	if len(asked) == 0 {
		return ""
	}
	return strings.Join(asked, ", ")
}

// sentinelRicher names the nodes that keep the recorded primary, still fenced (a node that restarted comes
// up so), from being opened ("" when it may be; always outside the Sentinel topology): Sentinel
// promoted it, and they answer holding data of the shard it lacks. Opened, it would take writes as the shard's newest data,
// and the replicas Sentinel points at it would sync from it and lose theirs (a node restarted
// without its data is promoted when the sentinels find no better replica they can use).
// Unfenced nodes need no such check: Sentinel's promotion opened them to writes already.
func (d *decider) sentinelRicher(p Persisted, s int, prim *Node) string {
	if d.v.spec.Mode != ModeSentinel || len(d.p.Shards) <= s {
		return "" // the bootstrap opens the node it chose itself
	}
	rec := p.Shards[s]
	op := Operation{Election: Election{Shard: s, Lost: rec.Primary, LostRunID: rec.RunID, LostHistory: rec.History}}
	l, cands := d.candidates(op)
	var self *candidate
	for i := range cands {
		if cands[i].Node == prim {
			self = &cands[i]
		}
	}
	var richer []string
	for _, c := range cands {
		if c.Node == prim || c.Valkey.empty() {
			continue
		}
		if self == nil || !l.holds(*self, c) {
			richer = append(richer, fmt.Sprintf("%s (%d keys)", c.Name, c.Valkey.Keys))
		}
	}
	return strings.Join(richer, ", ")
}

// readmissible finds the recorded primary's pod answering as a new process at the address the
// sentinels name for the primary, holding the data of every node of the shard that holds
// any, with enough of the shard seen (the failover quorum): the sentinels' own master,
// restarted. The sentinels cannot promote it (it is their master) and may have no replica to
// promote instead (every other node lost its data too, or came back on an address they do
// not know), so the machine re-admits it: recorded as the new process, promoted in place when
// it came back a replica of nothing, then opened. No sentinel is contradicted: it is the
// node they name. One that holds less than another node does not qualify: the sentinels fail
// it over to a replica with the data (a master that reports itself a replica is failed over).
func (d *decider) readmissible(p Persisted) (*Node, bool) {
	if len(p.Shards) == 0 {
		return nil, false
	}
	rec := p.Shards[0]
	prim := d.v.node(rec.Primary)
	if !usable(prim) || prim.Valkey.RunID == rec.RunID || (prim.Valkey.Role == RoleReplica && prim.Valkey.PrimaryHost != "") {
		return nil, false
	}
	if c, ok := d.sentinelChoice(); !ok || c.IP != prim.Pod.IP || c.Epoch != rec.ClaimEpoch {
		return nil, false
	}
	op := Operation{Election: Election{Shard: 0, Lost: rec.Primary, LostRunID: rec.RunID, Writer: rec.Primary, LostHistory: rec.History}}
	if ok, _ := d.quorum(op); !ok {
		return nil, false
	}
	for _, n := range d.v.shard(0) {
		if n != prim && usable(n) && n.Valkey.Role == RolePrimary {
			return nil, false // another primary: the sentinels' business
		}
	}
	l, cands := d.candidates(op)
	var self *candidate
	for i := range cands {
		if cands[i].Node == prim {
			self = &cands[i]
		}
	}
	for _, n := range d.v.shard(0) {
		if n == prim || !usable(n) || n.Valkey.empty() {
			continue
		}
		// A node with data the lineage cannot place is not known to be held: not re-admitted.
		i := slices.IndexFunc(cands, func(c candidate) bool { return c.Node == n })
		if i < 0 || self == nil || !l.holds(*self, cands[i]) {
			return nil, false
		}
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
