package machine

import (
	"fmt"
	"strings"
	"time"
)

// Reason is why the machine took a transition, as a value for the kinds tests and tools read:
// its kind and subjects. String renders the words Transition.Message starts with (the history,
// the Kubernetes Event, the simulator's trace), so the text stays what users read. The zero
// Reason says nothing: the transition's reason is in its message only.
type Reason struct {
	Kind ReasonKind
	// Shard is the shard the reason is about.
	Shard int
	// Goal is what a planned hand-over (done or abandoned) was for; Node the primary it moved
	// the role away from, Peer the replica it moved it to.
	Goal       HandOverGoal
	Node, Peer string
	// ToShard and ToNode are what a changed switchover request asks for now.
	ToShard int
	ToNode  string
	// Pods is the pod count per shard a scale (or a scale-down's hand-over) works towards, PodsWere the one it starts
	// from, PodsKept how many the objects still ask for (more than PodsWere while a recorded
	// scale-down has not removed its ordinals yet).
	Pods, PodsWere, PodsKept int
	// Revision is the revision a rollout's hand-over (GoalRollout) rolls the primary to.
	Revision string
	// Offset is the elected node's replication offset at its election (Node elected to
	// replace Peer), Instead the node elected before it, whose election it replaces.
	Offset  int64
	Instead string
	// OverByKeys names the candidates the elected node was preferred to by key count alone
	// (restarted from append-only files, their data has no place in the history), Keys the
	// elected node's key count; "" when the election did not rest on key counts.
	OverByKeys string
	Keys       int64
	// Others describes the shard's other nodes by what they hold (describeData, joined): for
	// a bootstrap election the nodes that sync from the elected one, for the user's choice
	// the nodes whose data it discards.
	Others string
	// Same names the nodes a bootstrap election found to hold the elected node's data (equal
	// digests); Empty the node a wake was recorded to start from that holds no data now.
	Same, Empty string
	// Shards is how many shards a bootstrap wired, SpecShards how many the spec asks for;
	// Kept why the pods beyond the spec's count were started, Woken whether the shards beyond
	// it were woken (else started for volumes kept from before this cluster).
	Shards, SpecShards int
	Kept               KeptFor
	Woken              bool
	// WakeFrom is a hibernation's record of the node each shard wakes from ("-": by its
	// nodes' data), space-separated; WakeFromWas the record it replaces.
	WakeFrom, WakeFromWas string
	// Primaries is a primary per shard, space-separated: for a hibernation's record the
	// shards' recorded primaries when it was made; for a scale-down those on the ordinals it
	// removes, "-" for a shard whose primary stays ("" when every one stays).
	Primaries string
	// Fenced is how the old primary (Peer) a failover replaced is known to take no writes any
	// more; Slots whether the node elected again serves the shard's slots again (cluster mode).
	Fenced Fenced
	Slots  bool
	// Deposed names the pods an election deposed for their claims without pods, joined;
	// GivenUp the unseen nodes it went without by the user's decision (failover-without);
	// KeysGivenUp the deposed pods it counted by their marks by that decision, giving up
	// their keys beyond (WaitDeposedMayHoldTheLine).
	Deposed, GivenUp, KeysGivenUp string
	// Fault is what is wrong with a lost primary (primary-lost). Unpromoted is the elected
	// node lost before its promotion, Writer the primary whose history the re-election starts
	// from again.
	Fault              PrimaryFault
	Unpromoted, Writer string
	// Preempted is the operation a failover interrupted, resumed from Steady afterwards.
	Preempted State
	// OpenSlots is how many slots an unfinished migration left open, finished first.
	OpenSlots int
}

// failoverWhy is what failoverOf found for a shard's primary: what is wrong with it, whether
// a failover is due, and, when one would be but the machine holds it back, why (no quorum, no
// node to elect): the reason a user is told, apart from the fault, so that it is not found
// again in the words.
type failoverWhy struct {
	Shard    int
	Fault    PrimaryFault
	Due      bool
	HeldBack string
	// Held is a wait of its own kind that holds the failover back, when one does
	// (WaitDeposedMayHoldTheLine): it words the reason and what the user can do.
	Held Wait
}

// wait is what the machine waits for while node, the shard's recorded primary, does not answer
// as recorded: a wait of kind (WaitFailover, WaitElectedNotAnswering) with the fault and why the
// failover is held back, or the wait of its own kind that holds it back.
func (w failoverWhy) wait(kind WaitKind, node string) Wait {
	if w.Held.Kind != WaitNone {
		held := w.Held
		held.Detail = w.fault()
		return held
	}
	return Wait{Kind: kind, Shard: w.Shard, Node: node, Detail: w.fault(), Also: w.HeldBack}
}

// fault words what is wrong with the primary, the shard named when the failover is due.
func (w failoverWhy) fault() string {
	if w.Due {
		return fmt.Sprintf("shard %d: %s", w.Shard, w.Fault)
	}
	return w.Fault.String()
}

// PrimaryFault is what the observation says is wrong with a shard's recorded primary: why it
// is lost, or why it is not (yet).
type PrimaryFault struct {
	Kind PrimaryFaultKind
	// Primary is the recorded primary; Server the node serving the shard's slots instead.
	Primary, Server string
	// RunID is the process the primary runs as now (abbreviated), RunIDWas the recorded one.
	RunID, RunIDWas string
	// Probes is how many probes of it failed, of Threshold (FailureThreshold) needed.
	Probes, Threshold int
	// Heard names the replicas that still hear from it.
	Heard string
}

// PrimaryFaultKind is the closed set of what can be wrong with a recorded primary.
type PrimaryFaultKind uint8

// The primary faults.
const (
	FaultNone PrimaryFaultKind = iota
	// FaultPodGone: its pod is gone.
	FaultPodGone
	// FaultRestarted: it answers as another process.
	FaultRestarted
	// FaultNotPrimary: it answers as no primary.
	FaultNotPrimary
	// FaultServesNoSlots: it serves none of the shard's slots while Server serves them
	// holding its data (cluster mode).
	FaultServesNoSlots
	// FaultContainerRestarted: its container restarted, the new process does not answer yet.
	FaultContainerRestarted
	// FaultNotRunning: its pod does not run.
	FaultNotRunning
	// FaultSuspected: FailureThreshold probes failed.
	FaultSuspected
	// FaultHeard: FailureThreshold probes failed, but its replicas still hear from it.
	FaultHeard
	// FaultUnreachable: fewer than FailureThreshold probes failed.
	FaultUnreachable
)

func (f PrimaryFault) String() string {
	switch f.Kind {
	case FaultPodGone:
		return fmt.Sprintf("pod of primary %s is gone", f.Primary)
	case FaultRestarted:
		return fmt.Sprintf("primary %s restarted (run id %s, was %s)", f.Primary, f.RunID, f.RunIDWas)
	case FaultNotPrimary:
		return fmt.Sprintf("primary %s is no longer a primary", f.Primary)
	case FaultServesNoSlots:
		return fmt.Sprintf("primary %s serves none of the shard's slots (it takes no write), while %s serves them holding its data", f.Primary, f.Server)
	case FaultContainerRestarted:
		return fmt.Sprintf("primary %s restarted (its container restarted; the new process does not answer yet)", f.Primary)
	case FaultNotRunning:
		return fmt.Sprintf("primary %s is not running", f.Primary)
	case FaultSuspected:
		return fmt.Sprintf("primary %s unreachable for %d probes", f.Primary, f.Probes)
	case FaultHeard:
		return fmt.Sprintf("primary %s unreachable for %d probes, but %s still hear from it: no failover while it serves its replicas", f.Primary, f.Probes, f.Heard)
	case FaultUnreachable:
		return fmt.Sprintf("primary %s unreachable for %d of %d probes", f.Primary, f.Probes, f.Threshold)
	}
	return ""
}

// Fenced is how the machine knows an old primary can no longer accept writes.
type Fenced struct {
	How FencedBy
	// Timeout is the FenceTimeout that passed (FencedByTimeout); SealedAt the seal of the last
	// visible replica it ran from, zero when it ran from the election.
	Timeout  time.Duration
	SealedAt time.Time
}

// FencedBy is the evidence an old primary takes no writes.
type FencedBy uint8

// The evidence an old primary takes no writes.
const (
	FencedNone FencedBy = iota
	// FencedKnownDead: recorded at the election as unable to write.
	FencedKnownDead
	// FencedPodGone: its pod is gone or not running.
	FencedPodGone
	// FencedRestarted: it runs as another process, which starts fenced.
	FencedRestarted
	// FencedObserved: it answers fenced.
	FencedObserved
	// FencedByTimeout: FenceTimeout passed.
	FencedByTimeout
)

func (f Fenced) String() string {
	switch f.How {
	case FencedKnownDead:
		return "old primary known dead"
	case FencedPodGone:
		return "old primary's pod gone"
	case FencedRestarted:
		return "old primary restarted fenced"
	case FencedObserved:
		return "old primary observed fenced"
	case FencedByTimeout:
		if !f.SealedAt.IsZero() {
			return fmt.Sprintf("fence timeout %s passed since its replicas were sealed, the last at %s", f.Timeout, f.SealedAt.Format("15:04:05.000"))
		}
		return fmt.Sprintf("fence timeout %s passed", f.Timeout)
	}
	return ""
}

// KeptFor is why a bootstrap started pods beyond the spec's count.
type KeptFor uint8

// The reasons pods beyond the spec run at a bootstrap's end.
const (
	// KeptLowered: the spec was lowered during the bootstrap.
	KeptLowered KeptFor = iota
	// KeptWake: a wake started the claims the shards ran on when they stopped.
	KeptWake
	// KeptVolumes: their volumes were kept from before this cluster.
	KeptVolumes
)

func (k KeptFor) String() string {
	switch k {
	case KeptWake:
		return "started for the claims the shards ran on when they stopped"
	case KeptVolumes:
		return "started for the volumes kept there from before this cluster"
	}
	return "the spec was lowered during the bootstrap"
}

// ReasonKind is the closed set of transition reasons given as values.
type ReasonKind uint8

// The reason kinds.
const (
	ReasonNone ReasonKind = iota
	// ReasonHandOverTargetGone: a planned hand-over's target is no longer a caught-up replica.
	ReasonHandOverTargetGone
	// ReasonSwitchoverWithdrawn: the switchover request was taken out of the spec.
	ReasonSwitchoverWithdrawn
	// ReasonSwitchoverChanged: the switchover request now asks for another shard or node.
	ReasonSwitchoverChanged
	// ReasonScaleUp: more pods per shard, added beyond the recorded count.
	ReasonScaleUp
	// ReasonScaleUpKeeping: more pods per shard while the objects still keep pods a recorded
	// scale-down has not removed yet: those are kept, the rest added.
	ReasonScaleUpKeeping
	// ReasonScaleDown: fewer pods per shard: the ordinals beyond the count are removed.
	ReasonScaleDown
	// ReasonSwitchedOver: a planned hand-over is done (failover-complete).
	ReasonSwitchedOver
	// ReasonElected: a node is elected to replace a lost primary (candidate-elected).
	ReasonElected
	// ReasonReseeded: no node holds the lost primary's data: the elected node starts a new
	// history, a data loss stated as such.
	ReasonReseeded
	// ReasonBootstrapElected: a bootstrap elects the node whose data contains every other
	// node's (bootstrap-elected).
	ReasonBootstrapElected
	// ReasonBootstrapChosen: a bootstrap starts from the node the user named.
	ReasonBootstrapChosen
	// ReasonBootstrapWoken: a wake starts from the node recorded when the pods stopped.
	ReasonBootstrapWoken
	// ReasonBootstrapDataLost: the node elected for its data is gone and no node holds data:
	// the shard starts empty.
	ReasonBootstrapDataLost
	// ReasonWired: every shard is wired to its first node (bootstrap-complete).
	ReasonWired
	// ReasonHibernateCaughtUp: the replicas caught up, the pods stop; WakeFrom is recorded.
	ReasonHibernateCaughtUp
	// ReasonWakeFromRestarted: recorded nodes restarted before their pods stopped: their
	// shards wake by their nodes' data.
	ReasonWakeFromRestarted
	// ReasonFailedOver: an unplanned failover is done: the elected node replaces the old
	// primary, which takes no writes any more (failover-complete).
	ReasonFailedOver
	// ReasonServesAgain: an unplanned failover elected the lost primary itself, which serves
	// again.
	ReasonServesAgain
	// ReasonPrimaryLost: a shard's recorded primary is lost (Fault) and a failover starts;
	// Pods is the scale-down whose interrupted hand-over is planned again afterwards.
	ReasonPrimaryLost
	// ReasonHandOverStarted: a planned hand-over from Node to Peer starts (switchover
	// requested, a scale-down's hand-over, a leaving primary's).
	ReasonHandOverStarted
	// ReasonReshard: the shards change from Shards to SpecShards, or slots move.
	ReasonReshard
)

// HandOverGoal is what a planned hand-over is for (SwitchoverGoal).
type HandOverGoal uint8

// The hand-over goals.
const (
	// GoalSwitchover: a requested switchover.
	GoalSwitchover HandOverGoal = iota
	// GoalScaleDown: moving a primary off an ordinal a scale-down removes.
	GoalScaleDown
	// GoalLeaving: moving the role before the primary's pod stops.
	GoalLeaving
	// GoalRollout: moving the role before a rollout restarts the primary's pod (the Sentinel
	// topology, whose sentinels carry the hand-over out from FailingOver).
	GoalRollout
)

// goalOf is the goal of the planned hand-over of op.
func goalOf(op Operation) HandOverGoal {
	switch {
	case op.Switchover.Leaving:
		return GoalLeaving
	case op.Switchover.Pods > 0:
		return GoalScaleDown
	case op.Switchover.Rollout:
		return GoalRollout
	}
	return GoalSwitchover
}

func (r Reason) String() string {
	switch r.Kind {
	case ReasonHandOverTargetGone:
		return r.abandoned(fmt.Sprintf("%s is no longer a caught-up replica", r.Peer))
	case ReasonSwitchoverWithdrawn:
		return r.abandoned("switchover request withdrawn")
	case ReasonSwitchoverChanged:
		return r.abandoned(fmt.Sprintf("switchover request changed to shard %d node %s", r.ToShard, r.ToNode))
	case ReasonScaleUp:
		return r.scale("add " + ordinals(r.PodsWere, r.Pods))
	case ReasonScaleUpKeeping:
		what := fmt.Sprintf("keep %s, not removed yet by the scale-down to %d", ordinals(r.PodsWere, min(r.PodsKept, r.Pods)), r.PodsWere)
		if r.Pods > r.PodsKept {
			what += "; add " + ordinals(r.PodsKept, r.Pods)
		}
		return r.scale(what)
	case ReasonScaleDown:
		out := r.scale("remove " + ordinals(r.Pods, r.PodsWere))
		for s, name := range strings.Fields(r.Primaries) {
			if name != "-" {
				out += fmt.Sprintf("; shard %d: primary %s is on one of them and is handed over first", s, name)
			}
		}
		return out
	case ReasonSwitchedOver:
		out := fmt.Sprintf("shard %d: switched over from %s to %s", r.Shard, r.Node, r.Peer)
		switch r.Goal {
		case GoalScaleDown:
			out += fmt.Sprintf(" for the scale-down to %d pod(s) per shard", r.Pods)
		case GoalLeaving:
			out += fmt.Sprintf(" before %s's pod stops", r.Node)
		case GoalRollout:
			out += fmt.Sprintf(" before %s's pod is rolled", r.Node)
		}
		return out
	case ReasonElected:
		out := fmt.Sprintf("shard %d: %s elected (offset %d) to replace %s", r.Shard, r.Node, r.Offset, r.Peer)
		if r.Instead != "" {
			out = fmt.Sprintf("shard %d: %s elected (offset %d) instead of %s to replace %s", r.Shard, r.Node, r.Offset, r.Instead, r.Peer)
		}
		if r.OverByKeys != "" {
			out += fmt.Sprintf("; chosen over %s by key count (%d keys): restarted from append-only files, which keep no replication offset, their data cannot be placed in the history", r.OverByKeys, r.Keys)
		}
		return out + r.deposed()
	case ReasonReseeded:
		return fmt.Sprintf("shard %d: DATA LOST: no node holds the data of %s; %s starts a new history", r.Shard, r.Peer, r.Node) + r.deposed()
	case ReasonPrimaryLost:
		out := fmt.Sprintf("shard %d: %s", r.Shard, r.Fault)
		if r.Unpromoted != "" {
			out += fmt.Sprintf("; %s was never promoted: the re-election starts from the history %s wrote", r.Unpromoted, r.Writer)
		}
		if r.Preempted != "" {
			out += fmt.Sprintf("; %s interrupted, resumed from Steady afterwards", r.Preempted)
		}
		if r.Pods > 0 {
			out += fmt.Sprintf("; the hand-over for the scale-down to %d pod(s) per shard is re-planned from Steady afterwards", r.Pods)
		}
		return out
	case ReasonHandOverStarted:
		switch r.Goal {
		case GoalScaleDown:
			return fmt.Sprintf("shard %d: %s hands over to %s before the scale-down to %d pod(s) per shard removes its ordinal", r.Shard, r.Node, r.Peer, r.Pods)
		case GoalLeaving:
			return fmt.Sprintf("shard %d: %s's pod is being deleted (kubectl delete, an eviction, a StatefulSet removing it): it hands over to %s before it stops", r.Shard, r.Node, r.Peer)
		case GoalRollout:
			return fmt.Sprintf("shard %d: %s hands over to %s before it is rolled to revision %s", r.Shard, r.Node, r.Peer, r.Revision)
		}
		return fmt.Sprintf("shard %d: switchover from %s to %s requested", r.Shard, r.Node, r.Peer)
	case ReasonReshard:
		out := fmt.Sprintf("reshard from %d to %d shard(s)", r.Shards, r.SpecShards)
		if r.OpenSlots > 0 {
			out += fmt.Sprintf("; %d slot(s) left open by an unfinished migration are finished first", r.OpenSlots)
		}
		return out
	case ReasonFailedOver:
		return fmt.Sprintf("shard %d: %s replaces %s (%s)", r.Shard, r.Node, r.Peer, r.Fenced)
	case ReasonServesAgain:
		out := fmt.Sprintf("shard %d: %s, the primary lost before, serves again: elected for its data", r.Shard, r.Node)
		if r.Slots {
			out += " and the shard's slots"
		}
		return out
	case ReasonBootstrapElected, ReasonBootstrapChosen, ReasonBootstrapWoken, ReasonBootstrapDataLost:
		return r.bootstrapElected()
	case ReasonWired:
		return r.wired()
	case ReasonHibernateCaughtUp, ReasonWakeFromRestarted:
		return r.wakeFrom()
	}
	return ""
}

func (r Reason) scale(what string) string {
	return fmt.Sprintf("scale from %d to %d pod(s) per shard: %s", r.PodsWere, r.Pods, what)
}

func (r Reason) abandoned(why string) string {
	what := "switchover"
	switch r.Goal {
	case GoalScaleDown:
		what = "hand-over for the scale-down"
	case GoalLeaving:
		what = fmt.Sprintf("hand-over before %s's pod stops", r.Node)
	case GoalRollout:
		what = fmt.Sprintf("hand-over before %s's pod is rolled", r.Node)
	}
	return fmt.Sprintf("shard %d: %s to %s abandoned: %s", r.Shard, what, r.Peer, why)
}

// deposed is the clauses of an election that deposes pods for their claims without pods, and
// that goes without unseen nodes or deposed pods' keys by the user's decision.
func (r Reason) deposed() string {
	var out string
	if r.Deposed != "" {
		out = fmt.Sprintf("; %s deposed (claims without pods: what those volumes hold beyond %s's data is off the line)", r.Deposed, r.Node)
	}
	if r.GivenUp != "" {
		out += fmt.Sprintf("; WITHOUT %s, unseen, by the user's decision (annotation valkey.fsm.dev/failover-without): writes only they hold are given up", r.GivenUp)
	}
	if r.KeysGivenUp != "" {
		out += fmt.Sprintf("; WITHOUT the keys of %s beyond what the shard had when it was deposed, by the user's decision (annotation valkey.fsm.dev/failover-without): writes only it holds are given up", r.KeysGivenUp)
	}
	return out
}

// dataOf says what an answering node holds, as describeData does.
func dataOf(node string, keys int64) string {
	if keys == 0 {
		return node + " empty"
	}
	return fmt.Sprintf("%s %d keys", node, keys)
}

func (r Reason) bootstrapElected() string {
	var out string
	switch r.Kind {
	case ReasonBootstrapChosen:
		out = fmt.Sprintf("shard %d: %s (%s) chosen by the user to bootstrap from", r.Shard, r.Node, dataOf(r.Node, r.Keys))
		if r.Others != "" {
			out += "; DATA DISCARDED on " + r.Others
		}
	case ReasonBootstrapDataLost:
		out = fmt.Sprintf("shard %d: DATA LOST: %s, elected for its data, no longer runs as that process and no node holds data any more; %s starts empty", r.Shard, r.Peer, r.Node)
	case ReasonBootstrapWoken:
		out = fmt.Sprintf("shard %d: %s (%s) elected to wake from: it was the primary when the pods stopped, with client writes closed and its replicas caught up", r.Shard, r.Node, dataOf(r.Node, r.Keys)) + r.othersSync()
	default:
		out = fmt.Sprintf("shard %d: %s (%s) elected to bootstrap from: its data contains every other node's", r.Shard, r.Node, dataOf(r.Node, r.Keys)) + r.othersSync()
		if r.Same != "" {
			out += fmt.Sprintf("; %s hold(s) the same data (equal digests): either could have been chosen", r.Same)
		}
		if r.OverByKeys != "" {
			out += fmt.Sprintf("; chosen over %s by key count: restarted from append-only files, which keep no replication offset, their data cannot be placed in a history", r.OverByKeys)
		}
		if r.Empty != "" {
			out += fmt.Sprintf("; %s, the primary when the pods stopped, holds no data now (was its volume lost?)", r.Empty)
		}
	}
	if r.Instead != "" {
		out += fmt.Sprintf(" (elected again: %s no longer runs as the process elected before)", r.Instead)
	}
	return out
}

func (r Reason) othersSync() string {
	if r.Others == "" {
		return ""
	}
	return "; " + r.Others + " will sync from it"
}

func (r Reason) wired() string {
	out := fmt.Sprintf("%d shard(s) of %d node(s) wired", r.Shards, r.Pods)
	if r.PodsKept > r.Pods {
		out = fmt.Sprintf("%d shard(s) of %d node(s) wired; %s, beyond the spec (%s), are removed by a scale-down next", r.Shards, r.PodsKept, ordinals(r.Pods, r.PodsKept), r.Kept)
	}
	if r.Shards > r.SpecShards {
		how := "started for the volumes kept there from before this cluster"
		if r.Woken {
			how = "woken with the data they held"
		}
		out += fmt.Sprintf("; %d shard(s) beyond the spec's %d, %s, are removed by a resharding next", r.Shards-r.SpecShards, r.SpecShards, how)
	}
	return out
}

func (r Reason) wakeFrom() string {
	from := strings.Fields(r.WakeFrom)
	var said []string
	if r.Kind == ReasonWakeFromRestarted {
		for s, name := range strings.Fields(r.WakeFromWas) {
			if name != "-" && s < len(from) && from[s] == "-" {
				said = append(said, fmt.Sprintf("shard %d by its nodes' data (%s restarted before it stopped: a crash may have lost writes its replicas hold)", s, name))
			}
		}
		return "the wake starts " + strings.Join(said, ", ")
	}
	primaries := strings.Split(r.Primaries, " ")
	for s, name := range from {
		switch {
		case name != "-":
			said = append(said, fmt.Sprintf("shard %d from %s", s, name))
		case s < len(primaries):
			said = append(said, fmt.Sprintf("shard %d by its nodes' data (%s no longer serves)", s, primaries[s]))
		}
	}
	return "replicas caught up with their primaries: every pod stops; the wake starts " + strings.Join(said, ", ")
}
