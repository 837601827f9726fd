package sim

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Options tune a simulation.
type Options struct {
	// Sabotage breaks one rule on purpose (tests of the checks).
	Sabotage Sabotage
	// Trace records a readable history of the run.
	Trace bool
	// LivenessBound is how many ticks, after faults stop, Steady must be reached in
	// (DefaultLivenessBound when 0).
	LivenessBound int
	// Journal keeps every decision's observation in a journal as the operator's does (see
	// Records), for replays; off in the chaos runs, which do not need it.
	Journal bool
	// NoOracle turns off the check of the election model's claims against the world
	// (oracle.go), to measure what it costs.
	NoOracle bool
}

// DefaultLivenessBound: enough for a failover, a pending rollout of every pod and a
// resharding with the timing constants of the world.
const DefaultLivenessBound = 400

// Sim is a world with its operator, advanced one step at a time.
type Sim struct {
	w    *World
	op   *Operator
	opts Options
	// namedAt is the persisted sequence number when the user last named a pod in the
	// failover-without annotation: a failover completed after it clears the annotation.
	namedAt uint64
}

// New starts a simulation of a topology.
func New(t Topology, opts Options) *Sim {
	w := NewWorld(t)
	w.sabotage = opts.Sabotage
	w.journaling = opts.Journal
	w.oracle.off = opts.NoOracle
	if opts.Trace {
		w.trace = &trace{}
	}
	if opts.LivenessBound == 0 {
		opts.LivenessBound = DefaultLivenessBound
	}
	return &Sim{w: w, op: newOperator(w, opts.Sabotage), opts: opts}
}

// Step plays one step of a schedule, lets a tick pass (pods, replication) and checks the
// world's safety properties.
func (s *Sim) Step(st Step) {
	w := s.w
	if w.trace == nil || !w.trace.quiet {
		w.note("step: %s", st)
	}
	switch st.Kind {
	case StepOperator:
		s.op.step()
	case StepWrite:
		w.write(st.Write)
	case StepFault:
		s.fault(st.Fault)
	case StepUser:
		s.user(st.User)
	}
	s.advance()
}

func (s *Sim) advance() {
	w := s.w
	w.tick++
	w.stats.Ticks++
	w.flushTick()
	w.finishHandOvers()
	w.evictions()
	w.kube()
	w.gossip()
	w.pump()
	s.startOrTickSentinels()
	w.checkWorld()
}

// fault applies a fault.
func (s *Sim) fault(f Fault) {
	w := s.w
	w.stats.Faults[f.Kind]++
	var n *node
	if f.Kind != FaultPartition && f.Kind != FaultPartitionOneWay && f.Kind != FaultScaleStatefulSet && !f.Kind.OfSentinels() {
		n = w.resolve(f.Node)
	}
	switch f.Kind {
	case FaultKillPrimary, FaultKillNode:
		if n != nil {
			w.restart(n, w.topo.Persistence)
		}
	case FaultPause:
		if n != nil {
			n.pausedUntil = w.tick + int64(f.Ticks)
		}
	case FaultPartition, FaultPartitionOneWay:
		w.operatorSide, w.clientSide = 0, 0
		w.oneWay, w.dropFrom = f.Kind == FaultPartitionOneWay, 0
		if f.Outbound {
			w.dropFrom = 1
		}
		for _, m := range w.nodes {
			m.side = 0
		}
		for _, r := range f.Nodes {
			if m := w.resolve(r); m != nil {
				m.side = 1
			}
		}
		if f.Operator {
			w.operatorSide = 1
		}
		if f.Client {
			w.clientSide = 1
		}
		w.sentinelSides(f)
	case FaultPartitionOperator:
		if n != nil {
			n.operatorCut = true
		}
	case FaultDeletePod:
		if n != nil {
			w.deletePod(n, w.topo.Persistence)
		}
	case FaultEvictPod:
		if n != nil && n.exists && !n.terminating {
			n.terminating, n.terminateBy = true, w.tick+EvictHoldTicks
			w.note("kube: %s deleted gracefully; its preStop hook holds it while it is a primary with a linked replica", n.name)
		}
	case FaultIPChange:
		if n != nil {
			w.deletePod(n, true)
		}
	case FaultEmptyRestart:
		if n != nil {
			n.volumeLost = true
			w.restart(n, false)
		}
	case FaultLinkLag:
		if n != nil {
			n.lagTicks = f.Ticks
		}
	case FaultOperatorCrash:
		s.op.crash(f.InFlight, int64(f.Skew))
	case FaultAPIConflict:
		s.op.conflicts += f.Count
	case FaultActuatorFailure:
		s.op.failures += f.Count
	case FaultSlowActuator:
		s.op.slowTicks = f.Ticks
	case FaultManualFailover:
		// A person checks that the cluster is Steady first, and does not hand over to a pod
		// the spec is removing; a hand-over run behind the operator's back in the middle of
		// its own failover is out of scope. One handed back at once (a script trying a
		// failover out) leaves the primary where it was, so it is run during a rollout too.
		from := w.resolve(NodeRef{Shard: f.Node.Shard, Primary: true})
		state := s.op.status.Persisted.State
		if from != nil && n != nil && from != n && (state == machine.Steady || f.Back && state == machine.Rolling) && n.ordinal <= w.spec.Replicas {
			if err := w.failoverTo(from, n, false); err == nil {
				w.sentinelHandedOver(from, n)
				w.note("manual FAILOVER TO: %s handed over to %s", from.name, n.name)
				if f.Back {
					w.handBack(from, n)
				}
			}
		}
	case FaultHeal:
		s.heal()
	case FaultScaleStatefulSet:
		w.scaleObjectsBehindTheOperator()
	case FaultKillSentinel, FaultPauseSentinel, FaultRenewSentinel:
		w.sentinelFault(f)
	}
}

// heal ends partitions, pauses and link lags.
func (s *Sim) heal() {
	w := s.w
	w.operatorSide, w.clientSide = 0, 0
	w.oneWay = false
	for _, n := range w.nodes {
		n.side, n.operatorCut, n.lagTicks = 0, false, 0
		if n.pausedUntil > w.tick {
			n.pausedUntil = w.tick
		}
	}
	w.sentinelSides(Fault{Kind: FaultHeal})
}

// user applies a user change.
func (s *Sim) user(u UserAction) {
	w := s.w
	switch u.Kind {
	case UserRollout:
		w.spec.Generation++
		w.spec.Revision = fmt.Sprintf("r%d", w.spec.Generation)
		if w.spec.SentinelRevision != "" {
			// An image changes the sentinels' template as well as the data pods'.
			w.spec.SentinelRevision = fmt.Sprintf("s%d", w.spec.Generation)
		}
	case UserSwitchover:
		if u.Clear {
			w.spec.Switchover = nil
		} else {
			w.spec.Switchover = &machine.Switchover{Shard: 0, To: nodeName(0, u.To)}
		}
	case UserBackup:
		s.backup()
	case UserRestore:
		for i := len(w.snapshots) - 1; i >= 0; i-- {
			snap := w.snapshots[i]
			// A running cluster restores a snapshot of as many shards as it records; a
			// bootstrapping one (a recreated object) one of as many as the spec asks for, before
			// it opens for writes (bootstrap's restore-requested).
			shards := len(s.op.status.Persisted.Shards)
			if st := s.op.status.Persisted.State; st == "" || st == machine.Bootstrapping {
				shards = w.spec.Shards
			}
			if snap.slotsVersion == w.slotsVersion && len(snap.logs) == shards {
				w.restores++
				w.spec.Generation++
				w.spec.Restore = &machine.RestoreRequest{ID: fmt.Sprintf("restore-%d", w.restores), Snapshot: snap.id, Shards: len(snap.logs)}
				if u.To > 0 {
					w.snapshots[i].spoiled = u.To
					w.note("the files of backup %s are replaced in the store after the check", snap.id)
				}
				break
			}
		}
	case UserReshard:
		if w.topo.Mode == machine.ModeCluster && u.Shards > 0 {
			w.spec.Generation++
			w.spec.Shards = u.Shards
		}
	case UserGrowStorage:
		w.spec.Generation++
		w.spec.StorageBytes += 1 << 30
	case UserRotate:
		w.rotations++
		w.spec.Rotation = &machine.RotationRequest{ID: fmt.Sprintf("rotate-%d", w.rotations), Users: []string{"default", "operator", "replication"}}
	case UserRetire:
		w.spec.RetireNow = true
	case UserRenewCertificate:
		w.certs++
		w.certFile = fmt.Sprintf("cert-%d", w.certs)
		w.spec.Certificate = w.certFile
	case UserRecreate:
		w.recreate(u.To)
		// A new object: no status, no history, a journal of its own; the operator's memory
		// of the old one goes with it.
		s.op = newOperator(w, s.opts.Sabotage)
	case UserHibernate:
		if w.topo.Persistence && !w.spec.Hibernate {
			w.spec.Generation++
			w.spec.Hibernate = true
		}
	case UserWake:
		if w.spec.Hibernate {
			w.spec.Generation++
			w.spec.Hibernate = false
		}
	case UserScaleSentinels:
		if w.topo.Sentinel != nil && u.To > 0 && u.To != w.spec.Sentinels {
			w.spec.Generation++
			w.spec.Sentinels = u.To
		}
	case UserScaleUp, UserScaleDown:
		r := w.spec.Replicas + 1
		if u.Kind == UserScaleDown {
			r = w.spec.Replicas - 1
		}
		if r >= w.topo.MinReplicas && r <= w.topo.maxReplicas() {
			w.spec.Generation++
			w.spec.Replicas = r
		}
	}
}

// unspoil puts every spoiled backup's files back (the user's answer to a refused restore); the
// operator forgets its refusals once the spec changes, as the real one checks again then.
func (s *Sim) unspoil() bool {
	w, any := s.w, false
	for i := range w.snapshots {
		if w.snapshots[i].spoiled != 0 {
			w.snapshots[i].spoiled, any = 0, true
		}
	}
	if any || len(s.op.refusedLoads) > 0 {
		w.spec.Generation++
		s.op.refusedLoads = map[string]string{}
		return true
	}
	return false
}

// backup takes a snapshot of every recorded shard from the node accepting its writes (or its
// recorded primary), as a backup job would.
func (s *Sim) backup() {
	w := s.w
	recs := s.op.status.Persisted.Shards
	if len(recs) == 0 {
		return
	}
	snap := snapshot{id: fmt.Sprintf("snap-%d", len(w.snapshots)+1), slotsVersion: w.slotsVersion}
	for sh, rec := range recs {
		src := w.resolve(NodeRef{Shard: sh, Primary: true})
		if src == nil || !w.acceptsWrites(src) {
			src = w.byName(rec.Primary)
		}
		if src == nil || !src.exists {
			return
		}
		snap.logs = append(snap.logs, append([]int32(nil), src.log...))
	}
	w.snapshots = append(w.snapshots, snap)
	w.note("backup %s taken", snap.id)
}

// Converge stops the faults (heals the network, lets the actuators and the API succeed) and
// runs the operator, with a client still writing, until Steady is reached and a reconcile
// finds nothing to do; then a few more reconciles must not move it. It reports a liveness
// violation when that takes longer than the bound.
func (s *Sim) Converge() int {
	w := s.w
	w.note("faults stop: network healed, actuators and API succeed; the operator converges while the client keeps writing")
	if w.trace != nil {
		w.trace.quiet = true
	}
	s.heal()
	s.op.conflicts, s.op.failures, s.op.slowTicks = 0, 0, 0
	if s.unspoil() {
		w.note("the user puts the refused backup files back and touches the spec: the operator checks them again")
	}
	for i := 0; i < s.opts.LivenessBound; i++ {
		// A pod created or deleted after the decision (its preStop hook returned, the
		// StatefulSet re-created it) was not observed: the world is not at rest (found as
		// "Steady did not hold once settled" after an eviction, seed 80002539).
		pods, peers := w.podChanges, w.sentinelPeersLearnt()
		s.Step(Step{Kind: StepOperator})
		// Nor while the sentinels still learn of each other or of the replicas: a sentinel
		// re-created with a new id is known to the others only once its hellos arrive, a
		// replica at a new address once the primary's INFO lists it, and the stale entry of
		// the old id or address is reset then.
		rest := w.podChanges == pods && !w.podStopping() && w.sentinelPeersLearnt() == peers && !w.sentinelsLearningReplicas()
		if i%3 == 2 {
			s.Step(Step{Kind: StepWrite, Write: Write{Key: i % 32, Wait: true}})
		}
		if s.nameBootstrapSource() {
			w.note("the bootstrap waited for a person to choose between the nodes' data after %d operator steps", i+1)
		}
		if s.clearFailoverWithout() {
			w.note("the operator removes the annotation valkey.fsm.dev/failover-without: the failover it was given for completed")
		}
		if s.giveUpDeposedKeys() {
			w.note("the failover waited for a person to give up a deposed pod's keys after %d operator steps", i+1)
		}
		if w.spec.Hibernate && s.op.status.Persisted.State == machine.Hibernated && s.op.inflight == nil && !w.anyPod() {
			// Hibernated for good: the user wakes it, and Steady must follow with every
			// acknowledged write (the final checks).
			w.note("hibernated with every pod stopped after %d operator steps; the user wakes the cluster", i+1)
			w.spec.Generation++
			w.spec.Hibernate = false
		}
		if s.op.status.Persisted.State == machine.Steady && s.op.settled && s.op.inflight == nil && rest {
			seq := s.op.status.Persisted.Seq
			for j := 0; j < 3; j++ {
				s.Step(Step{Kind: StepOperator})
			}
			if s.op.status.Persisted.Seq != seq || !s.op.settled {
				w.violate(ViolationLiveness, "Steady did not hold once settled: %s", s.op.lastDecision)
			}
			s.op.checkJournal()
			for _, n := range w.nodes {
				if n.exists && n.volumeBytes < w.spec.StorageBytes {
					w.violate(ViolationLiveness, "settled with the volume of %s at %d bytes, the spec asks for %d", n.name, n.volumeBytes, w.spec.StorageBytes)
				}
			}
			w.note("settled in Steady after %d operator steps", i+1)
			return i + 1
		}
	}
	w.violate(ViolationLiveness, "Steady not reached within %d ticks after the faults stopped; state %s, last decision: %s",
		s.opts.LivenessBound, s.op.status.Persisted.State, s.op.lastDecision)
	return s.opts.LivenessBound
}

// Violations found so far.
func (s *Sim) Violations() []Violation { return s.w.violations }

// State is the persisted state of the simulated cluster.
func (s *Sim) State() machine.Persisted { return s.op.status.Persisted }

// Status is the simulated cluster's status.
func (s *Sim) Status() Status { return s.op.status }

// Journal is the operator's journal.
func (s *Sim) Journal() []machine.Entry { return s.op.journal }

// Stats of the run so far.
func (s *Sim) Stats() Stats { return s.w.stats }

// Trace is the readable history (when Options.Trace).
func (s *Sim) Trace() []string {
	if s.w.trace == nil {
		return nil
	}
	return s.w.trace.Lines()
}

// Result is the outcome of a whole schedule.
type Result struct {
	Violations []Violation
	Stats      Stats
	// ConvergeTicks is how long reaching Steady took after the faults stopped.
	ConvergeTicks int
	Trace         []string
}

// Run plays a schedule, then Converge.
func Run(t Topology, schedule []Step, opts Options) Result {
	s := New(t, opts)
	for _, st := range t.Start {
		s.Step(st)
	}
	for _, st := range schedule {
		s.Step(st)
	}
	ticks := s.Converge()
	return Result{Violations: s.Violations(), Stats: s.Stats(), ConvergeTicks: ticks, Trace: s.Trace()}
}
