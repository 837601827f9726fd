package sim

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The sentinel model's properties, each against what the world and every sentinel hold
// rather than what one sentinel believes (docs/development/sentinel-model.md).

var primaryRef = NodeRef{Shard: 0, Primary: true}

func newSentinelTestWorld(cfg SentinelConfig, order Source) *SentinelWorld {
	sw := NewSentinelWorld(Topologies["replication"], Options{Trace: true}, cfg, order)
	sw.Idle(12) // the sentinels find the replicas and each other
	return sw
}

// failTrace fails the test with the sentinels' events.
func failTrace(t *testing.T, sw *SentinelWorld, format string, args ...any) {
	t.Helper()
	var b strings.Builder
	for _, e := range sw.Events() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	t.Fatalf(format+"\nsentinel events:\n%s", append(args, b.String())...)
}

// promotions lists the epochs in which a sentinel saw its selected replica turn primary.
func promotions(sw *SentinelWorld) []uint64 {
	var out []uint64
	for _, e := range sw.Events() {
		if e.Kind == "+promoted-slave" {
			out = append(out, e.Epoch)
		}
	}
	return out
}

// exploreSentinels plays seeded schedules of world and sentinel faults and hands each world,
// healed and left to settle, to check.
// With userFailovers, a person's SENTINEL FAILOVER (no election) is among the faults; with
// renewals, a sentinel re-created without its id (a new voter with epochs at 0, its old id
// an extra voter to the others).
func exploreSentinels(t *testing.T, schedules int, cfgs []SentinelConfig, userFailovers, renewals bool, check func(t *testing.T, seed int64, sw *SentinelWorld)) {
	for seed := int64(1); seed <= int64(schedules); seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := cfgs[int(seed)%len(cfgs)]
		sw := newSentinelTestWorld(cfg, RandSource{r})
		for step := 0; step < 120; step++ {
			switch k := r.Intn(100); {
			case k < 35:
				sw.Step(Step{Kind: StepWrite, Write: Write{Key: r.Intn(32), Start: r.Intn(3), Wait: r.Intn(2) == 0}})
			case k < 60:
				sw.Step(Step{Kind: StepIdle})
			case k < 80:
				f := Fault{Node: NodeRef{Shard: 0, Ordinal: r.Intn(3), Primary: r.Intn(2) == 0}}
				switch r.Intn(6) {
				case 0:
					f.Kind = FaultKillNode
				case 1:
					f.Kind, f.Ticks = FaultPause, 1+r.Intn(40)
				case 2:
					f.Kind = FaultHeal
				case 3:
					f.Kind, f.Ticks = FaultLinkLag, 1+r.Intn(3)
				default:
					f.Kind, f.Client = FaultPartition, r.Intn(2) == 0
					for o := 0; o < 3; o++ {
						if r.Intn(2) == 0 {
							f.Nodes = append(f.Nodes, NodeRef{Shard: 0, Ordinal: o})
						}
					}
					var onB []int
					for i := 0; i < cfg.Sentinels; i++ {
						if r.Intn(2) == 0 {
							onB = append(onB, i)
						}
					}
					sw.Partition(Step{Kind: StepFault, Fault: f}, onB...)
					continue
				}
				sw.Step(Step{Kind: StepFault, Fault: f})
			default:
				i := r.Intn(cfg.Sentinels)
				switch r.Intn(6) {
				case 4:
					_ = sw.Apply(SentinelFault{Kind: SentinelMoved, Sentinel: i})
				case 5:
					if renewals {
						_ = sw.Apply(SentinelFault{Kind: SentinelRenewed, Sentinel: i, Addr: sw.w.resolve(primaryRef).ip})
					}
				case 0:
					_ = sw.Apply(SentinelFault{Kind: SentinelKill, Sentinel: i})
				case 1:
					_ = sw.Apply(SentinelFault{Kind: SentinelStart, Sentinel: i})
				case 2:
					_ = sw.Apply(SentinelFault{Kind: SentinelPause, Sentinel: i, Ticks: 1 + r.Intn(20)})
				case 3:
					// A person's SENTINEL FAILOVER: refused while one runs or no replica fits.
					if userFailovers {
						_ = sw.Apply(SentinelFault{Kind: SentinelFailover, Sentinel: i})
					}
				}
				sw.Step(Step{Kind: StepIdle})
			}
		}
		sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultHeal}})
		for i := range sw.sentinels {
			_ = sw.Apply(SentinelFault{Kind: SentinelStart, Sentinel: i})
		}
		// Settle: until no failover promoted a replica for three failover timeouts (the old
		// master and stray replicas are re-pointed one failover-timeout after the switch).
		for i := 0; i < 20; i++ {
			sw.Idle(100)
			last := int64(0)
			for _, e := range sw.Events() {
				if e.Kind == "+promoted-slave" {
					last = e.Tick
				}
			}
			if sw.w.tick-last > 3*cfg.FailoverTimeout {
				break
			}
		}
		check(t, seed, sw)
		if t.Failed() {
			return
		}
	}
}

var exploredConfigs = []SentinelConfig{
	DefaultSentinelConfig,
	{Sentinels: 5, Quorum: 2, DownAfter: 5, FailoverTimeout: 30, ParallelSyncs: 1},
	{Sentinels: 5, Quorum: 4, DownAfter: 5, FailoverTimeout: 20, ParallelSyncs: 2},
	{Sentinels: 3, Quorum: 1, DownAfter: 6, FailoverTimeout: 15, ParallelSyncs: 1},
}

// At most one sentinel is elected leader in an epoch, and no sentinel votes twice in one.
func TestSentinelAtMostOneLeaderPerEpoch(t *testing.T) {
	elections := 0
	exploreSentinels(t, 300, exploredConfigs, true, false, func(t *testing.T, seed int64, sw *SentinelWorld) {
		for epoch, leaders := range sw.Elected() {
			elections++
			if len(leaders) > 1 {
				failTrace(t, sw, "seed %d: epoch %d has leaders %v", seed, epoch, leaders)
			}
		}
		for _, v := range sw.Violations() {
			if strings.Contains(v, "voted for") {
				failTrace(t, sw, "seed %d: %s", seed, v)
			}
		}
	})
	if elections < 300 {
		t.Fatalf("only %d elections in 300 schedules: the exploration does not exercise the rule", elections)
	}
}

// A failover starts only on ODOWN (quorum sentinels finding the master down in their own
// views), and its leader holds the votes of a majority of the sentinels and at least quorum.
func TestSentinelFailoverNeedsODownAndMajority(t *testing.T) {
	exploreSentinels(t, 300, exploredConfigs, true, false, func(t *testing.T, seed int64, sw *SentinelWorld) {
		for _, v := range sw.Violations() {
			failTrace(t, sw, "seed %d: %s", seed, v)
		}
	})
	// A master down for one sentinel only, with quorum 2: no ODOWN, no failover.
	sw := newSentinelTestWorld(DefaultSentinelConfig, nil)
	sw.Partition(Step{Kind: StepFault, Fault: Fault{Kind: FaultPartition, Nodes: []NodeRef{primaryRef}}}, 1, 2)
	// Sentinels 1 and 2 are with the primary; sentinel 0 sees neither.
	sw.Idle(100)
	for _, e := range sw.Events() {
		if e.Kind == "+odown" || e.Kind == "+try-failover" {
			failTrace(t, sw, "a master one sentinel of three finds down went %s", e.Kind)
		}
	}
}

// A minority of sentinels cut off with the replicas cannot fail over, even with a quorum of
// one (ODOWN alone): the election needs a majority.
func TestSentinelPartitionedMinorityCannotFailOver(t *testing.T) {
	for _, cfg := range []SentinelConfig{
		{Sentinels: 3, Quorum: 1, DownAfter: 5, FailoverTimeout: 30, ParallelSyncs: 1},
		{Sentinels: 5, Quorum: 2, DownAfter: 5, FailoverTimeout: 30, ParallelSyncs: 1},
	} {
		sw := newSentinelTestWorld(cfg, nil)
		primary := sw.w.resolve(primaryRef)
		// Side B: both replicas and a minority of sentinels; the primary and the majority on A.
		minority := make([]int, 0, cfg.Sentinels/2)
		for i := 0; i < cfg.Sentinels/2; i++ {
			minority = append(minority, i)
		}
		sw.Partition(Step{Kind: StepFault, Fault: Fault{Kind: FaultPartition, Nodes: []NodeRef{{Shard: 0, Ordinal: 1}, {Shard: 0, Ordinal: 2}}}}, minority...)
		sw.Idle(200)
		tried := false
		for _, e := range sw.Events() {
			tried = tried || e.Kind == "+try-failover"
			if e.Kind == "+elected-leader" || e.Kind == "+selected-slave" {
				failTrace(t, sw, "%d of %d sentinels: %s", len(minority), cfg.Sentinels, e)
			}
		}
		if cfg.Quorum == 1 && !tried {
			failTrace(t, sw, "with quorum 1 the minority should have tried (ODOWN alone) and failed the election")
		}
		for _, n := range sw.w.shardNodes(0) {
			if n != primary && n.role == machine.RolePrimary {
				failTrace(t, sw, "%s was promoted by a minority", n.name)
			}
		}
	}
}

// A primary partitioned with a minority of sentinels and the client keeps taking writes
// (until min-replicas-max-lag runs out) while the majority fails over; once the partition
// heals, the old primary is made a replica of the new one and the writes it took alone are
// gone: what Sentinel's documentation says can be lost.
func TestSentinelPartitionedPrimaryKeepsWritingWhileMajorityFailsOver(t *testing.T) {
	sw := newSentinelTestWorld(DefaultSentinelConfig, nil)
	old := sw.w.resolve(primaryRef)
	sw.Partition(Step{Kind: StepFault, Fault: Fault{Kind: FaultPartition, Nodes: []NodeRef{primaryRef}, Client: true}}, 0)
	var taken []int32
	for i := 0; i < 40; i++ {
		before := len(old.log)
		sw.Step(Step{Kind: StepWrite, Write: Write{Key: i % 32}})
		if len(old.log) > before {
			taken = append(taken, old.log[len(old.log)-1])
		}
	}
	if len(taken) == 0 {
		failTrace(t, sw, "the partitioned primary took no write")
	}
	var promoted *node
	for _, n := range sw.w.shardNodes(0) {
		if n != old && n.role == machine.RolePrimary {
			promoted = n
		}
	}
	if promoted == nil {
		failTrace(t, sw, "the majority did not fail over")
	}
	if sw.View(0).Addr != old.ip || sw.View(0).ConfigEpoch != 0 {
		failTrace(t, sw, "the sentinel with the old primary should still see it as master: %+v", sw.View(0))
	}
	sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultHeal}})
	sw.Idle(60)
	if old.role != machine.RoleReplica || old.masterIP != promoted.ip {
		failTrace(t, sw, "the old primary was not made a replica of %s: role %s master %s", promoted.name, old.role, old.masterIP)
	}
	for i := range sw.sentinels {
		if v := sw.View(i); v.Addr != promoted.ip {
			failTrace(t, sw, "%s did not take the new master: %+v", v.ID, v)
		}
	}
	for _, id := range taken {
		if promoted.has.get(id) || old.has.get(id) {
			failTrace(t, sw, "write %d the isolated primary took survived; the model should lose it as Sentinel does", id)
		}
	}
}

// After the primary's process is killed (it restarts in place as a replica of nothing, the
// pod template's start), the sentinels fail over and every sentinel converges on the new
// master at the highest epoch; the explorations end the same way once healed.
func TestSentinelConvergesAfterPrimaryKill(t *testing.T) {
	sw := newSentinelTestWorld(DefaultSentinelConfig, nil)
	old := sw.w.resolve(primaryRef)
	sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillPrimary, Node: primaryRef}})
	sw.Idle(150)
	if len(promotions(sw)) == 0 {
		failTrace(t, sw, "no failover after the primary's kill")
	}
	if checkConverged(t, 0, sw) {
		failTrace(t, sw, "no replica to promote after the primary's kill")
	}
	if v := sw.View(0); sw.NodeAt(v.Addr) == old.name {
		failTrace(t, sw, "the sentinels kept the killed primary")
	}
	stuck := 0
	exploreSentinels(t, 300, exploredConfigs, false, false, func(t *testing.T, seed int64, sw *SentinelWorld) {
		if checkConverged(t, seed, sw) {
			stuck++
		}
	})
	t.Logf("%d of 300 schedules ended with no replica Sentinel would promote", stuck)
}

// checkConverged: every sentinel names the same master with the same config epoch, the
// highest epoch any failover promoted in. The node there is a primary that every other node
// follows, unless Sentinel is stuck as sentinel.c is when no replica qualifies (every one's
// link to its master down too long, or priority 0): then the master is not a primary and
// every failover since the heal aborted for want of a replica.
// It reports whether Sentinel is stuck so.
func checkConverged(t *testing.T, seed int64, sw *SentinelWorld) (stuck bool) {
	t.Helper()
	want := sw.View(0)
	var highest uint64
	for _, e := range promotions(sw) {
		highest = max(highest, e)
	}
	for i := range sw.sentinels {
		v := sw.View(i)
		if v.Addr != want.Addr || v.ConfigEpoch != want.ConfigEpoch {
			failTrace(t, sw, "seed %d: sentinels disagree: %+v and %+v", seed, want, v)
		}
	}
	if want.ConfigEpoch != highest {
		failTrace(t, sw, "seed %d: the sentinels' config epoch %d is not the highest promotion's %d", seed, want.ConfigEpoch, highest)
	}
	master := sw.w.byIP(want.Addr)
	if master == nil || master.role != machine.RolePrimary {
		last := ""
		for _, e := range sw.Events() {
			if strings.HasPrefix(e.Kind, "-failover-abort") || e.Kind == "+selected-slave" {
				last = e.Kind
			}
		}
		if last != "-failover-abort-no-good-slave" {
			failTrace(t, sw, "seed %d: no primary at the sentinels' master %s, and the last failover decision was %q", seed, want.Addr, last)
		}
		return true
	}
	for i := range sw.sentinels {
		if sw.View(i).Failover {
			failTrace(t, sw, "seed %d: a failover still runs at %s", seed, sw.View(i).ID)
		}
	}
	for _, n := range sw.w.shardNodes(0) {
		if n != master && (n.role != machine.RoleReplica || n.masterIP != master.ip) {
			failTrace(t, sw, "seed %d: %s (%s) does not follow %s", seed, n.name, n.role, master.name)
		}
	}
	return false
}

// The replica a failover promotes is the one Sentinel's rules pick from what the replicas
// report: replica-priority 0 never, then the lowest priority, the largest replication offset,
// the smallest run id; a replica whose link to its master has been down longer than ten
// down-after periods plus the master's down time is skipped. The expected pick is computed
// from the data nodes themselves at the tick the leader chose.
func TestSentinelSelectsTheReplicaSentinelsRulesPick(t *testing.T) {
	topo := Topologies["replication"]
	topo.Replicas = 3
	picked, none, stale := 0, 0, 0
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		cfg := DefaultSentinelConfig
		// A short down-after makes the replicas' link age count (ten down-after periods).
		cfg.DownAfter = []int64{2, 5}[r.Intn(2)]
		cfg.Priority = map[string]int{}
		for o := 1; o <= topo.Replicas; o++ {
			cfg.Priority[nodeName(0, o)] = []int{0, 10, 100, 100, 100}[r.Intn(5)]
		}
		sw := NewSentinelWorld(topo, Options{Trace: true}, cfg, RandSource{r})
		sw.Idle(12)
		old := sw.w.resolve(primaryRef)
		// Writes while replicas lag or restart (a restarted replica comes back empty and
		// unlinked until a sentinel re-points it), so that offsets and link ages differ.
		for i := 0; i < 30; i++ {
			replica := NodeRef{Shard: 0, Ordinal: 1 + r.Intn(topo.Replicas)}
			switch r.Intn(6) {
			case 0:
				sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultLinkLag, Node: replica, Ticks: 1 + r.Intn(4)}})
			case 1:
				sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillNode, Node: replica}})
			default:
				sw.Step(Step{Kind: StepWrite, Write: Write{Key: r.Intn(32)}})
			}
		}
		sw.Idle(r.Intn(60))
		// The master stops answering (a pause), or restarts as a replica of nothing (a kill),
		// which takes longer to find down (its role, not its silence) while the replicas'
		// links age.
		if r.Intn(2) == 0 {
			sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultPause, Node: primaryRef, Ticks: 1000}})
		} else {
			sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillPrimary, Node: primaryRef}})
		}
		var decided *SentinelEvent
		for i := 0; i < 100 && decided == nil; i++ {
			seen := len(sw.Events())
			sw.Step(Step{Kind: StepIdle})
			for _, e := range sw.Events()[seen:] {
				if e.Kind == "+selected-slave" || e.Kind == "-failover-abort-no-good-slave" {
					decided = &e
					break
				}
			}
		}
		if decided == nil {
			failTrace(t, sw, "seed %d: no failover decided a replica", seed)
		}
		want, why := expectedPick(sw, old, sw.sentinelByID(decided.Sentinel))
		got := ""
		if decided.Kind == "+selected-slave" {
			got = strings.Fields(decided.Detail)[0]
			picked++
		} else {
			none++
		}
		if strings.Contains(why, "too long") {
			stale++
		}
		if got != want {
			failTrace(t, sw, "seed %d: %s selected %q, the rules pick %q:\n%s", seed, decided.Sentinel, got, want, why)
		}
	}
	// The seeds must reach each branch of the rule.
	if picked < 100 || none == 0 || stale == 0 {
		t.Fatalf("%d picks, %d without a replica, %d with a replica down too long: the seeds do not exercise the rule", picked, none, stale)
	}
}

// expectedPick applies Sentinel's selection rule to the data nodes as they are: the replicas
// of the old master's group other than it, by priority, offset and run id; leader's view
// only gives how long it has found the master down.
func expectedPick(sw *SentinelWorld, old *node, leader *sentinel) (string, string) {
	now := sw.w.tick
	maxDown := 10*sw.cfg.DownAfter + now - leader.m.inst.sdownSince
	type cand struct {
		name, runID string
		priority    int
		offset      int64
	}
	var cands []cand
	var why strings.Builder
	for _, n := range sw.w.shardNodes(0) {
		if n == old || n.role != machine.RoleReplica {
			continue
		}
		p, ok := sw.cfg.Priority[n.name]
		if !ok {
			p = sentinelDefaultPriority
		}
		var linkDown int64
		if !n.linkUp {
			linkDown = sw.linkDownSeconds(n)
		}
		fmt.Fprintf(&why, "  %s priority %d offset %d run %s link down %d (limit %d)", n.name, p, n.offset(), n.runID, linkDown, maxDown)
		switch {
		case p == 0:
			why.WriteString(": priority 0\n")
			continue
		case linkDown > maxDown:
			why.WriteString(": link down too long\n")
			continue
		}
		why.WriteString("\n")
		cands = append(cands, cand{n.name, n.runID, p, n.offset()})
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.priority != b.priority {
			return a.priority < b.priority
		}
		if a.offset != b.offset {
			return a.offset > b.offset
		}
		return a.runID < b.runID
	})
	if len(cands) == 0 {
		return "", why.String()
	}
	return cands[0].name, why.String()
}

// SENTINEL FAILOVER needs no election: two of them sent to sentinels that cannot hear each
// other take the same epoch (each one above its own current epoch) and promote two replicas;
// hellos only carry a strictly higher config epoch, so once the partition heals the sentinels
// still disagree at the same epoch, each side re-pointing the other's master, until one side
// finds its master down and a real election settles it. A planned hand-over must go to one
// sentinel, one that has heard of the highest epoch.
func TestSentinelTwoUserFailoversInOneEpochSplitTheSentinels(t *testing.T) {
	sw := newSentinelTestWorld(DefaultSentinelConfig, nil)
	// Sentinel 0 and replica s0-1 on side B; the primary, s0-2 and sentinels 1 and 2 on A.
	sw.Partition(Step{Kind: StepFault, Fault: Fault{Kind: FaultPartition, Nodes: []NodeRef{{Shard: 0, Ordinal: 1}}}}, 0)
	sw.Idle(2)
	for _, i := range []int{0, 1} {
		if err := sw.Apply(SentinelFault{Kind: SentinelFailover, Sentinel: i}); err != nil {
			failTrace(t, sw, "SENTINEL FAILOVER on sentinel %d: %v", i, err)
		}
	}
	sw.Idle(40)
	a, b := sw.View(0), sw.View(1)
	if a.ConfigEpoch != 1 || b.ConfigEpoch != 1 || a.Addr == b.Addr {
		failTrace(t, sw, "expected two masters at epoch 1: %+v and %+v", a, b)
	}
	sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultHeal}})
	sw.Idle(5)
	if a, b := sw.View(0), sw.View(1); a.ConfigEpoch != b.ConfigEpoch || a.Addr == b.Addr {
		failTrace(t, sw, "the hellos of equal epochs should leave the split: %+v and %+v", a, b)
	}
	sw.Idle(300)
	if checkConverged(t, 0, sw) {
		failTrace(t, sw, "no replica to promote after the split")
	}
	if v := sw.View(0); v.ConfigEpoch < 2 {
		failTrace(t, sw, "the split should end with an election at a higher epoch: %+v", v)
	}
}

// The election's rules hold among sentinels that keep their ids. A sentinel renewed without
// its id starts again at epoch 0 knowing no other sentinel until hellos reach it: it can be
// elected in an epoch another sentinel already won, or by fewer votes than a majority of the
// sentinels that run (a majority of the few it knows, with quorum 1 its own vote). The
// exploration must find both: the Sentinel topology has to keep each sentinel's id.
func TestSentinelRenewedIDsBreakTheElection(t *testing.T) {
	twoLeaders, minority := 0, 0
	exploreSentinels(t, 300, exploredConfigs, false, true, func(t *testing.T, seed int64, sw *SentinelWorld) {
		for _, v := range sw.Violations() {
			switch {
			case strings.Contains(v, "has leaders"):
				twoLeaders++
			case strings.Contains(v, "elected in epoch"):
				minority++
			}
		}
	})
	t.Logf("renewed ids: %d epochs with two leaders, %d leaders without a majority, in 300 schedules", twoLeaders, minority)
	if twoLeaders == 0 || minority == 0 {
		t.Fatalf("the model no longer lets a renewed sentinel break the election (%d, %d): it counts voters as sentinel.c does not", twoLeaders, minority)
	}
}

// A sentinel is known by its id. Re-created on a new IP with its config file, the others move
// it to its new address and it stays one voter; re-created from a template without its id,
// it is a new voter and its old id stays in the others' counts. With three sentinels, one
// renewed so and one more stopped, the old sentinel that runs knows four ids and cannot be
// elected with two votes (real sentinels answer CKQUORUM with NOQUORUM then); only the
// renewed one, which never heard of the old id, can lead, once its timer fires before the
// old one's (each vote for the old one holds it back two failover timeouts).
func TestSentinelRenewedWithoutItsIDStaysAnExtraVoter(t *testing.T) {
	for _, kind := range []SentinelFaultKind{SentinelMoved, SentinelRenewed} {
		for _, order := range []int64{1, 2, 3, 4, 5, 6} {
			sw := newSentinelTestWorld(DefaultSentinelConfig, RandSource{rand.New(rand.NewSource(order))})
			primary := sw.w.resolve(primaryRef)
			if err := sw.Apply(SentinelFault{Kind: kind, Sentinel: 2, Addr: primary.ip}); err != nil {
				t.Fatal(err)
			}
			sw.Idle(10)
			known := 2
			if kind == SentinelRenewed {
				known = 3 // its old id and its new one
			}
			if v := sw.View(0); v.Sentinels != known {
				failTrace(t, sw, "%s: %s knows %d other sentinels, want %d", kind, v.ID, v.Sentinels, known)
			}
			_ = sw.Apply(SentinelFault{Kind: SentinelKill, Sentinel: 1})
			sw.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultPause, Node: primaryRef, Ticks: 1000}})
			sw.Idle(600)
			if len(promotions(sw)) == 0 {
				failTrace(t, sw, "%s: two of three sentinels should fail over", kind)
			}
			for epoch, leaders := range sw.Elected() {
				if kind == SentinelRenewed && leaders[0] == sw.View(0).ID {
					failTrace(t, sw, "%s: %s was elected in epoch %d with two of four ids' votes", kind, leaders[0], epoch)
				}
			}
		}
	}
}
