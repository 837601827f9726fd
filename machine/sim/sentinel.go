package sim

import (
	"fmt"
	"sort"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A model of Valkey Sentinel (src/sentinel.c at 8.0.1) run beside the simulated data nodes:
// a set of sentinels monitoring shard 0's primary, each with its own view of the master, its
// replicas and the other sentinels, electing a leader per failover epoch and failing over by
// REPLICAOF on the world's nodes. Nothing in it reads a clock or draws randomness: it moves
// with the world's ticks (one tick is one second of sentinel.c's clock, its timer's
// granularity here), and the only choice it makes, the order in which the sentinels' timers
// fire within a tick, comes from a Source (sentinel.c desynchronises its timers with rand()).
// The sentinels live on the world's network: each is on side A or B of the world's
// partition, so a sentinel reaches a data node or another sentinel exactly as two data nodes
// reach each other (World.reaches). docs/development/sentinel-model.md says what the model
// covers and what it leaves out.

// SentinelConfig is the sentinels' settings; times in ticks.
type SentinelConfig struct {
	// Sentinels is how many sentinels run (their ordinals are 0..Sentinels-1).
	Sentinels int
	// Quorum is `sentinel monitor`'s quorum: how many sentinels must find the master down for
	// ODOWN, and the least votes a leader needs besides the majority.
	Quorum int
	// DownAfter is down-after-milliseconds (Valkey's default is 30 s).
	DownAfter int64
	// FailoverTimeout is failover-timeout (default 180 s): a retry waits twice it, a replica
	// following the wrong primary is re-pointed after it, a failover step times out after it.
	FailoverTimeout int64
	// ParallelSyncs is parallel-syncs (default 1): replicas re-pointed at once.
	ParallelSyncs int
	// Priority is replica-priority per data node (pod name); absent means 100, 0 never promoted.
	Priority map[string]int
}

// DefaultSentinelConfig is three sentinels with quorum 2, on the simulator's time scale (a
// down-after of 5 ticks rather than 30 s, so that a failover fits a schedule).
var DefaultSentinelConfig = SentinelConfig{Sentinels: 3, Quorum: 2, DownAfter: 5, FailoverTimeout: 30, ParallelSyncs: 1}

// sentinel.c's fixed periods (sentinel_info_period, sentinel_ping_period, ...), in ticks.
const (
	sentinelInfoPeriod           = 10
	sentinelPingPeriod           = 1
	sentinelAskPeriod            = 1
	sentinelPublishPeriod        = 2
	sentinelElectionTimeout      = 10
	sentinelReplicaReconfTimeout = 10
	sentinelDefaultPriority      = 100
	// sentinelMasterName is the name every sentinel monitors the master under.
	sentinelMasterName = "mymaster"
)

// never stands for sentinel.c's time 0 ("not yet"): far enough in the past that every
// "now - t > period" holds.
const never int64 = -1 << 40

// Failover states (SENTINEL_FAILOVER_STATE_*).
type failoverState int

const (
	failoverNone failoverState = iota
	failoverWaitStart
	failoverSelectReplica
	failoverSendNoOne
	failoverWaitPromotion
	failoverReconfReplicas
	failoverUpdateConfig
)

// SentinelWorld is a simulated world whose shard 0 is watched by sentinels: the world's own
// steps (writes, faults, idle ticks) are played by its Sim, and after each the sentinels run
// one tick. The Sim's operator is never given a step: here the sentinels decide.
type SentinelWorld struct {
	Sim *Sim
	w   *World
	cfg SentinelConfig
	// order, when set, draws the order of the sentinels' timers in each tick.
	order     Source
	sentinels []*sentinel
	idSeq     int
	ipSeq     int

	events []SentinelEvent
	// peersLearnt counts the sentinels' +sentinel and +slave events: while it moves, what the
	// sentinels know of each other and of the replicas is still changing (the quiet phase's
	// rest).
	peersLearnt int
	// elected lists, per failover epoch, the sentinels that found themselves elected leader
	// (a forced failover is not an election and is not listed).
	elected map[uint64][]string
	// Checks of the election rules against what every sentinel holds (sentinel_check.go).
	violations []string
	// downSeen is the last tick a sentinel's own view found the master at an address SDOWN;
	// votes each sentinel's vote per epoch.
	downSeen map[downKey]int64
	votes    map[voteKey]string
	// The data nodes' repl_down_since, which the world does not keep: per process (run id),
	// the tick its established link to its master was lost (0: linked, a primary, or never
	// linked since it started or was re-pointed), and whether it was linked at the last tick.
	downSince map[string]int64
	wasLinked map[string]bool
}

// downKey names a sentinel's view of the master at an address.
type downKey struct{ sentinel, addr string }

// SentinelEvent is one of the events sentinel.c logs (+sdown, +odown, +try-failover,
// +vote-for-leader, +elected-leader, +selected-slave, +promoted-slave, +switch-master, ...).
type SentinelEvent struct {
	Tick     int64
	Sentinel string
	Kind     string
	Epoch    uint64
	Detail   string
}

func (e SentinelEvent) String() string {
	return fmt.Sprintf("t=%d %s %s epoch %d %s", e.Tick, e.Sentinel, e.Kind, e.Epoch, e.Detail)
}

// sentinel is one Sentinel process.
type sentinel struct {
	ordinal int
	myid    string
	ip      string
	side    int
	running bool
	// added: the operator added it to the running sentinels (scaleSentinels).
	added bool
	// revision is the template its pod was made from; restartAt, when above 0, is the tick
	// its pod, deleted (RollSentinel), is made again at the StatefulSet's revision.
	revision  string
	restartAt int64
	// readyAt is the tick from which its pod is ready once it runs: a pod made again is
	// ready a probe period after its process started.
	readyAt int64
	// pausedUntil: frozen (SIGSTOP) until this tick.
	pausedUntil  int64
	currentEpoch uint64
	m            *monitored
}

// monitored is the master as one sentinel monitors it (a sentinelValkeyInstance with
// SRI_PRIMARY, its replicas and sentinels dicts).
type monitored struct {
	// set is the group's settings as this sentinel was told them (quorum, down-after,
	// failover-timeout, parallel-syncs; the rest of SentinelConfig is not read from it).
	set         SentinelConfig
	inst        *instance
	configEpoch uint64
	odown       bool
	odownSince  int64
	replicas    []*instance // by address
	sentinels   []*peer     // by run id
	// leader and leaderEpoch are this sentinel's vote (primary->leader, leader_epoch).
	leader      string
	leaderEpoch uint64

	failover        failoverState
	failoverEpoch   uint64
	failoverStart   int64
	failoverChanged int64
	forced          bool
	// byOperator: the failover is the operator's hand-over (SentinelHandOver), whose pick
	// the checks hold to the operator's standard, not Sentinel's.
	byOperator bool
	promoted   *instance
}

// instance is a data node as one sentinel sees it: what its PINGs and INFO told.
type instance struct {
	addr  string
	runID string
	// lastAvail: the last valid PING reply; actPing: the first PING not answered yet (never
	// when none is pending); disconnected: the last PING got no answer.
	lastAvail, actPing int64
	disconnected       bool
	lastPub            int64
	infoRefresh        int64
	roleReported       machine.Role
	roleReportedTime   int64
	sdown              bool
	sdownSince         int64
	// From a replica's INFO.
	masterHost       string
	masterLinkUp     bool
	linkDownTime     int64
	confChangeTime   int64
	priority         int
	offset           int64
	promoted         bool
	reconfSent       bool
	reconfInProgress bool
	reconfDone       bool
	reconfSentTime   int64
}

// peer is another sentinel as one sentinel knows it.
type peer struct {
	runID, addr     string
	lastHello       int64
	lastDownReply   int64
	masterDown      bool
	leader          string
	leaderEpoch     uint64
	lastPub         int64
	lastDownAskSent int64
}

// NewSentinelWorld builds a replication group of topology t's shard 0 (ordinal 0 the primary,
// the others its linked replicas, every node open: Sentinel, not the operator, moves the
// roles here) and cfg.Sentinels sentinels monitoring its primary, which find each other
// through hello messages in the first ticks. order, when not nil, draws the order of the
// sentinels' timers in each tick.
func NewSentinelWorld(t Topology, opts Options, cfg SentinelConfig, order Source) *SentinelWorld {
	s := New(t, opts)
	w := s.w
	w.objects = machine.Objects{Shards: 1, Replicas: t.Replicas, Revision: w.spec.Revision}
	s.Step(Step{Kind: StepIdle})
	s.Step(Step{Kind: StepIdle}) // the processes answer from now on
	nodes := w.shardNodes(0)
	primary := nodes[0]
	w.promote(primary)
	primary.writesFenced, primary.syncFenced = false, false
	for _, n := range nodes[1:] {
		n.writesFenced, n.syncFenced = false, false
		n.masterIP, n.linkUp = primary.ip, false
	}
	w.setHolder(0, primary)
	s.Step(Step{Kind: StepIdle}) // the replicas link
	return newSentinelWorld(s, cfg, order, primary.ip)
}

// newSentinelWorld starts cfg.Sentinels sentinels beside the world of s, each monitoring the
// master at masterIP.
func newSentinelWorld(s *Sim, cfg SentinelConfig, order Source, masterIP string) *SentinelWorld {
	sw := &SentinelWorld{Sim: s, w: s.w, cfg: cfg, order: order, elected: map[uint64][]string{}, downSeen: map[downKey]int64{},
		downSince: map[string]int64{}, wasLinked: map[string]bool{}}
	for i := 0; i < cfg.Sentinels; i++ {
		sw.sentinels = append(sw.sentinels, sw.newSentinel(i, masterIP))
	}
	return sw
}

func (sw *SentinelWorld) newSentinel(ordinal int, masterIP string) *sentinel {
	s := &sentinel{ordinal: ordinal, myid: sw.newSentinelID(), ip: sw.newSentinelIP(), running: true, revision: sw.w.objects.SentinelRevision}
	if s.revision == "" {
		s.revision = sw.w.spec.SentinelRevision // started before the operator's first EnsureObjects
	}
	if masterIP != "" {
		s.m = sw.newMonitored(masterIP, sw.cfg)
	}
	return s
}

// newMonitored is the group as SENTINEL MONITOR (or a `sentinel monitor` line) starts it: the
// master at masterIP, config epoch 0, no replica or other sentinel known yet.
func (sw *SentinelWorld) newMonitored(masterIP string, set SentinelConfig) *monitored {
	return &monitored{set: set, inst: newInstance(masterIP, sw.w.tick, machine.RolePrimary, 0), failoverStart: never, failoverChanged: never, odownSince: never}
}

func (sw *SentinelWorld) newSentinelID() string {
	sw.idSeq++
	return fmt.Sprintf("sentinel%02d", sw.idSeq)
}

func (sw *SentinelWorld) newSentinelIP() string {
	sw.ipSeq++
	return fmt.Sprintf("10.9.0.%d", sw.ipSeq)
}

// newInstance is createSentinelValkeyInstance: a fresh record, "available" now.
func newInstance(addr string, now int64, role machine.Role, priority int) *instance {
	return &instance{addr: addr, lastAvail: now, actPing: never, lastPub: now, infoRefresh: never,
		roleReported: role, roleReportedTime: now, sdownSince: never, confChangeTime: now, priority: priority,
		reconfSentTime: never}
}

// Step plays one step of the world, then one tick of the sentinels. The steps are the world's
// own; an operator step is refused (the operator does not act in this model). A heal of the
// world also heals the sentinels (sides and pauses); a partition puts every sentinel on side
// A (Partition puts some on side B).
func (sw *SentinelWorld) Step(st Step) { sw.Partition(st) }

// Partition plays a step as Step does; when it is a partition of the world, the sentinels
// onB are on its side B.
func (sw *SentinelWorld) Partition(st Step, onB ...int) {
	if st.Kind == StepOperator {
		panic("sentinel world: the operator does not act here")
	}
	sw.Sim.Step(st)
	if st.Kind == StepFault {
		switch st.Fault.Kind {
		case FaultHeal:
			for _, s := range sw.sentinels {
				s.side = 0
				if s.pausedUntil > sw.w.tick {
					s.pausedUntil = sw.w.tick
				}
			}
		case FaultPartition, FaultPartitionOneWay:
			for _, s := range sw.sentinels {
				s.side = 0
			}
			for _, i := range onB {
				sw.sentinels[i].side = 1
			}
		}
	}
	sw.tick()
}

// Idle lets n ticks pass.
func (sw *SentinelWorld) Idle(n int) {
	for i := 0; i < n; i++ {
		sw.Step(Step{Kind: StepIdle})
	}
}

// sentinelUp: the sentinel's process runs and is not frozen.
func (sw *SentinelWorld) sentinelUp(s *sentinel) bool {
	return s.running && sw.w.tick >= s.pausedUntil
}

// sides reports whether what is sent from side a arrives at side b (the world's partition).
func (sw *SentinelWorld) sides(a, b int) bool {
	return a == b || sw.w.oneWay && a != sw.w.dropFrom
}

// talksToNode: s's requests reach node n and its answers come back.
func (sw *SentinelWorld) talksToNode(s *sentinel, n *node) bool {
	return n != nil && sw.sentinelUp(s) && sw.w.responsive(n) && sw.sides(s.side, n.side) && sw.sides(n.side, s.side)
}

// talksToSentinel: a's requests reach b and b's answers come back.
func (sw *SentinelWorld) talksToSentinel(a, b *sentinel) bool {
	return a != nil && b != nil && sw.sentinelUp(a) && sw.sentinelUp(b) && sw.sides(a.side, b.side) && sw.sides(b.side, a.side)
}

func (sw *SentinelWorld) sentinelByID(runID string) *sentinel {
	for _, s := range sw.sentinels {
		if s.myid == runID {
			return s
		}
	}
	return nil
}

func (sw *SentinelWorld) sentinelByAddr(addr string) *sentinel {
	for _, s := range sw.sentinels {
		if s.ip == addr {
			return s
		}
	}
	return nil
}

// tick runs every running sentinel's timer once (sentinelTimer), in the drawn order.
func (sw *SentinelWorld) tick() {
	sw.remakeRolled()
	sw.trackLinks()
	order := make([]int, len(sw.sentinels))
	for i := range order {
		order[i] = i
	}
	if sw.order != nil {
		for i := len(order) - 1; i > 0; i-- {
			j := sw.order.Intn(i+1, "sentinel-order")
			order[i], order[j] = order[j], order[i]
		}
	}
	for _, i := range order {
		s := sw.sentinels[i]
		if sw.sentinelUp(s) && s.m != nil {
			sw.timer(s)
		}
	}
}

// timer is sentinelHandleDictOfValkeyInstances for the one master: the master, then its
// replicas, then its sentinels, then the switch to a promoted replica once a failover ended.
func (sw *SentinelWorld) timer(s *sentinel) {
	m := s.m
	sw.periodic(s, m.inst, true)
	sw.checkSubjectivelyDown(s, m.inst, true)
	sw.checkObjectivelyDown(s)
	if sw.startFailoverIfNeeded(s) {
		sw.askOthers(s, true)
	}
	sw.failoverStateMachine(s)
	sw.askOthers(s, false)
	for _, r := range append([]*instance(nil), m.replicas...) {
		if s.m != m {
			break // a hello switched the master while this timer ran
		}
		sw.periodic(s, r, false)
		sw.checkSubjectivelyDown(s, r, false)
	}
	for _, p := range append([]*peer(nil), m.sentinels...) {
		if sw.w.tick-p.lastPub >= sentinelPublishPeriod {
			sw.helloToSentinel(s, p)
		}
	}
	if s.m == m && m.failover == failoverUpdateConfig {
		sw.switchToPromoted(s)
	}
}

// trackLinks keeps each data node's repl_down_since as Valkey does: set when an established
// link to its master is lost, cleared when it links again or becomes a primary; a process
// that never linked reports none (INFO's master_link_down_since_seconds is then -1, which
// Sentinel's selection never finds too long).
func (sw *SentinelWorld) trackLinks() {
	for _, n := range sw.w.nodes {
		if !n.exists || !n.running {
			continue
		}
		linked := n.role == machine.RoleReplica && n.linkUp
		switch {
		case n.role == machine.RolePrimary || linked:
			sw.downSince[n.runID] = 0
		case sw.wasLinked[n.runID]:
			sw.downSince[n.runID] = sw.w.tick
		}
		sw.wasLinked[n.runID] = linked
	}
}

// linkDownSeconds is what n's INFO says in master_link_down_since_seconds (-1: never linked).
func (sw *SentinelWorld) linkDownSeconds(n *node) int64 {
	if since := sw.downSince[n.runID]; since != 0 {
		return sw.w.tick - since
	}
	return -1
}

func (sw *SentinelWorld) event(s *sentinel, kind string, epoch uint64, format string, args ...any) {
	e := SentinelEvent{Tick: sw.w.tick, Sentinel: s.myid, Kind: kind, Epoch: epoch, Detail: fmt.Sprintf(format, args...)}
	sw.events = append(sw.events, e)
	sw.w.note("sentinel: %s", e)
}

// Events are the sentinels' events so far.
func (sw *SentinelWorld) Events() []SentinelEvent { return sw.events }

// SentinelView is what one sentinel answers about the master.
type SentinelView struct {
	ID string
	// Addr is GET-MASTER-ADDR-BY-NAME: the promoted replica's address once a failover has
	// reached the reconfiguration of the replicas.
	Addr         string
	ConfigEpoch  uint64
	CurrentEpoch uint64
	// Sentinels is how many other sentinels it knows (num-other-sentinels).
	Sentinels int
	Running   bool
	Failover  bool
}

// View is sentinel i's answer.
func (sw *SentinelWorld) View(i int) SentinelView {
	s := sw.sentinels[i]
	if s.m == nil {
		return SentinelView{ID: s.myid, CurrentEpoch: s.currentEpoch, Running: s.running}
	}
	return SentinelView{ID: s.myid, Addr: currentMasterAddr(s.m), ConfigEpoch: s.m.configEpoch, CurrentEpoch: s.currentEpoch,
		Sentinels: len(s.m.sentinels), Running: s.running, Failover: s.m.failover != failoverNone}
}

// currentMasterAddr is sentinelGetCurrentPrimaryAddress.
func currentMasterAddr(m *monitored) string {
	if m.failover != failoverNone && m.promoted != nil && m.failover >= failoverReconfReplicas {
		return m.promoted.addr
	}
	return m.inst.addr
}

// NodeAt names the pod at an address ("" when none).
func (sw *SentinelWorld) NodeAt(addr string) string {
	if n := sw.w.byIP(addr); n != nil {
		return n.name
	}
	return ""
}

// Elected lists, per epoch, the sentinels that were elected leader in it.
func (sw *SentinelWorld) Elected() map[uint64][]string { return sw.elected }

// Violations are the election rules the sentinels broke (sentinel_check.go).
func (sw *SentinelWorld) Violations() []string { return sw.violations }

// sortReplicas keeps a master's replicas in address order, as iteration needs to be
// deterministic (sentinel.c iterates a dict).
func (m *monitored) sortReplicas() {
	sort.Slice(m.replicas, func(i, j int) bool { return m.replicas[i].addr < m.replicas[j].addr })
}

// peer is the other sentinel with runID as m knows it (nil: unknown).
func (m *monitored) peer(runID string) *peer {
	for _, p := range m.sentinels {
		if p.runID == runID {
			return p
		}
	}
	return nil
}

func (m *monitored) replicaAt(addr string) *instance {
	for _, r := range m.replicas {
		if r.addr == addr {
			return r
		}
	}
	return nil
}

// SentinelDataNode is what a data node of the watched group reports of itself (its
// INFO replication), for comparing the model with real processes.
type SentinelDataNode struct {
	Name, Addr string
	// Up: the process answers.
	Up      bool
	Primary bool
	// MasterAddr is a replica's master_host ("" for a primary or a replica of nothing).
	MasterAddr string
}

// DataNodes lists the watched group's data nodes by ordinal.
func (sw *SentinelWorld) DataNodes() []SentinelDataNode {
	var out []SentinelDataNode
	for _, n := range sw.w.shardNodes(0) {
		d := SentinelDataNode{Name: n.name, Addr: n.ip, Up: sw.w.responsive(n), Primary: n.role == machine.RolePrimary}
		if !d.Primary {
			d.MasterAddr = n.masterIP
		}
		out = append(out, d)
	}
	return out
}
