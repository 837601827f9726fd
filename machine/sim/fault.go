package sim

import (
	"fmt"
	"strings"
)

// FaultKind names a kind of fault. The kinds are plain strings so that schedules can be
// written down, stored and played against real processes by the end-to-end chaos suite.
type FaultKind string

const (
	// FaultKillPrimary kills the process of the shard's current primary; the container is
	// restarted in place (same IP), with its data only when persistence is on.
	FaultKillPrimary FaultKind = "kill-primary"
	// FaultKillNode kills a node's process, as FaultKillPrimary.
	FaultKillNode FaultKind = "kill-node"
	// FaultPause freezes a node (SIGSTOP) for Ticks: it answers nobody, then resumes as the
	// same process, possibly still believing it is a primary.
	FaultPause FaultKind = "pause"
	// FaultPartition splits the network in two: Nodes (and the operator and the client when
	// Operator / Client say so) on side B, everything else on side A.
	FaultPartition FaultKind = "partition"
	// FaultPartitionOneWay is a partition that drops the messages one way only: from side B to
	// the rest when Outbound, else from the rest to side B (a firewall rule on one side, an
	// asymmetric route). The operator and the client need both ways.
	FaultPartitionOneWay FaultKind = "partition-one-way"
	// FaultPartitionOperator cuts the operator from one node only.
	FaultPartitionOperator FaultKind = "partition-operator"
	// FaultDeletePod deletes a node's pod; the StatefulSet recreates it with a new IP and its
	// data only when persistence is on.
	FaultDeletePod FaultKind = "delete-pod"
	// FaultEvictPod deletes a node's pod gracefully (kubectl delete with its grace period, a
	// drain's eviction): its preStop hook keeps the process running while it is a primary
	// with a linked replica, at most EvictHoldTicks, then the pod goes as with delete-pod.
	FaultEvictPod FaultKind = "evict-pod"
	// FaultIPChange recreates a node's pod on a new IP with its volume: the data is kept.
	FaultIPChange FaultKind = "ip-change"
	// FaultEmptyRestart restarts a node's container with no data at all (volume lost).
	FaultEmptyRestart FaultKind = "empty-restart"
	// FaultLinkLag slows a replica's link: it only receives every Ticks+1 ticks.
	FaultLinkLag FaultKind = "link-lag"
	// FaultOperatorCrash restarts the operator between two steps: its memory (probe counts,
	// queued actions) is lost; an action in flight has taken effect only if InFlight. The new
	// incarnation reads another clock, Skew ticks off the old one (a new leader on another
	// node).
	FaultOperatorCrash FaultKind = "operator-crash"
	// FaultAPIConflict makes the next Count status writes fail with a conflict.
	FaultAPIConflict FaultKind = "api-conflict"
	// FaultActuatorFailure makes the next Count actions fail.
	FaultActuatorFailure FaultKind = "actuator-failure"
	// FaultSlowActuator makes the next action take Ticks before it takes effect, the operator
	// waiting on it meanwhile.
	FaultSlowActuator FaultKind = "slow-actuator"
	// FaultManualFailover is a person running FAILOVER TO on the shard's primary behind the
	// operator's back, towards the replica Node names (when it is a caught-up replica), while
	// the cluster's state is Steady.
	FaultManualFailover FaultKind = "manual-failover"
	// FaultHeal ends every partition, pause and link lag.
	FaultHeal FaultKind = "heal"
	// FaultScaleStatefulSet is a person (kubectl scale) or another controller asking the
	// cluster's StatefulSets for one more pod behind the operator's back, in any state. The pod
	// starts at once, on the claim a scale-down or a deleted cluster kept (data and all) when
	// there is one. During a rollout or a resharding the machine leaves the objects as they are
	// until the operation ends (a scale-down is carried out only in Steady): a pod deposed by a
	// failover after its scale-down comes back in the middle of the operation.
	FaultScaleStatefulSet FaultKind = "scale-statefulset"
	// FaultKillSentinel stops sentinel Sentinel's process (the Sentinel topology); a heal
	// starts it again from its config file.
	FaultKillSentinel FaultKind = "kill-sentinel"
	// FaultPauseSentinel freezes sentinel Sentinel for Ticks.
	FaultPauseSentinel FaultKind = "pause-sentinel"
	// FaultRenewSentinel re-creates sentinel Sentinel's pod without its file (a new volume):
	// a new address and id, monitoring nothing until the operator tells it; the others keep
	// its old id as a voter that never answers.
	FaultRenewSentinel FaultKind = "renew-sentinel"
)

// OfSentinels reports whether the kind is a fault of a sentinel process. These kinds are not
// in FaultKinds: the generator draws them for the Sentinel topology alone (GenSentinelFault),
// so that the other topologies' schedules stay as they were.
func (k FaultKind) OfSentinels() bool {
	return k == FaultKillSentinel || k == FaultPauseSentinel || k == FaultRenewSentinel
}

// FaultKinds lists every kind, in the order the generator indexes them.
var FaultKinds = []FaultKind{
	FaultKillPrimary, FaultKillNode, FaultPause, FaultPartition, FaultPartitionOperator,
	FaultDeletePod, FaultIPChange, FaultEmptyRestart, FaultLinkLag, FaultOperatorCrash,
	FaultAPIConflict, FaultActuatorFailure, FaultSlowActuator, FaultManualFailover, FaultHeal,
	FaultEvictPod, FaultPartitionOneWay, FaultScaleStatefulSet,
}

// EvictHoldTicks bounds how long an evicted primary's preStop hook holds its pod (the pod
// template's 15 s, in ticks of about a second).
const EvictHoldTicks = 15

// PreStopLingerTicks is how long the preStop hook lingers once a primary it held handed its
// role over (the pod template's 2 s).
const PreStopLingerTicks = 2

// NodeRef names a node portably: by shard and ordinal (pod <cluster>-<shard>-<ordinal>), or
// as "the current primary of the shard", resolved when the fault is applied.
type NodeRef struct {
	Shard   int
	Ordinal int
	Primary bool
}

func (r NodeRef) String() string {
	if r.Primary {
		return fmt.Sprintf("primary-of-s%d", r.Shard)
	}
	return nodeName(r.Shard, r.Ordinal)
}

// Fault is one fault of a schedule.
type Fault struct {
	Kind FaultKind
	// Node is the target of node faults.
	Node NodeRef
	// Nodes, Operator and Client describe side B of a partition; Outbound says which way a
	// one-way partition drops.
	Nodes    []NodeRef
	Operator bool
	Client   bool
	Outbound bool
	Ticks    int
	Count    int
	InFlight bool
	// Skew is, for an operator crash, how far the new incarnation's clock is from the old
	// one's, in ticks (seconds; negative: behind).
	Skew int
	// Back: the manual failover is handed back to the primary within the step (see
	// Sim.handBack).
	Back bool
	// Sentinel is the sentinel (by ordinal) of a sentinel fault; Sentinels are the sentinels
	// on side B of a partition (the Sentinel topology).
	Sentinel  int
	Sentinels []int
}

func (f Fault) String() string {
	switch f.Kind {
	case FaultPartition, FaultPartitionOneWay:
		var side []string
		for _, n := range f.Nodes {
			side = append(side, n.String())
		}
		if f.Operator {
			side = append(side, "operator")
		}
		if f.Client {
			side = append(side, "client")
		}
		for _, i := range f.Sentinels {
			side = append(side, sentinelName(i))
		}
		switch {
		case f.Kind == FaultPartition:
			return fmt.Sprintf("partition {%s} | rest", strings.Join(side, ","))
		case f.Outbound:
			return fmt.Sprintf("partition-one-way {%s} -x> rest", strings.Join(side, ","))
		default:
			return fmt.Sprintf("partition-one-way {%s} <x- rest", strings.Join(side, ","))
		}
	case FaultPause, FaultLinkLag:
		return fmt.Sprintf("%s %s %d ticks", f.Kind, f.Node, f.Ticks)
	case FaultOperatorCrash:
		s := "operator-crash"
		if f.InFlight {
			s += " (action in flight took effect)"
		}
		if f.Skew != 0 {
			s += fmt.Sprintf(" (clock %+ds)", f.Skew)
		}
		return s
	case FaultAPIConflict, FaultActuatorFailure:
		return fmt.Sprintf("%s x%d", f.Kind, f.Count)
	case FaultSlowActuator:
		return fmt.Sprintf("%s %d ticks", f.Kind, f.Ticks)
	case FaultHeal, FaultScaleStatefulSet:
		return string(f.Kind)
	case FaultKillSentinel, FaultRenewSentinel:
		return fmt.Sprintf("%s %s", f.Kind, sentinelName(f.Sentinel))
	case FaultPauseSentinel:
		return fmt.Sprintf("%s %s %d ticks", f.Kind, sentinelName(f.Sentinel), f.Ticks)
	case FaultManualFailover:
		if f.Back {
			return fmt.Sprintf("%s %s and back", f.Kind, f.Node)
		}
		return fmt.Sprintf("%s %s", f.Kind, f.Node)
	default:
		return fmt.Sprintf("%s %s", f.Kind, f.Node)
	}
}
