package machine

import (
	"fmt"
	"time"
)

// Wait is a reason the machine gives for not progressing: what it waits for, about which shard
// and node. It is a value so that tests and tools read its kind and subject; String renders the
// words users read in status.waiting, the Ready condition, logs and the simulator's notes.
// The zero Wait is no reason: nothing to wait for.
type Wait struct {
	Kind WaitKind
	// Shard is the shard the reason is about, for the kinds that name one (KindNamesShard);
	// 0 otherwise.
	Shard int
	// Node is the node the reason is about (a primary, a candidate, a stray); Peer the other
	// node it names (the primary a replica catches up with, the target of a hand-over).
	Node, Peer string
	// ID names a restore or password rotation; Other the rotation another one waits for.
	ID, Other string
	// Detail is the part of the text another rule words (an election's reason, a list of
	// nodes); Also the reason a scale-down also waits for, a refused restore's give-back,
	// why a failover is held back (FailoverHeldBack).
	Detail, Also string
	// N and Of are numbers the text names: an offset and the one it catches up with, a key
	// count, a slot; ToShard the other shard of an open slot.
	N, Of   int64
	ToShard int
	// Until is the time an old primary may accept writes until.
	Until time.Time
}

// WaitKind is the closed set of reasons Decide gives for waiting.
type WaitKind uint8

// The wait kinds, one per reason the machine words.
const (
	WaitNone WaitKind = iota
	// Decide's own.
	WaitUnknownState
	WaitStaleObservation
	// Bootstrapping.
	WaitBootstrapElection
	WaitDataChoice
	WaitElectedNotAsElected
	WaitNoNodeAnswersBecause
	WaitNoNodeAnswersYet
	WaitNoNodeAnswers
	WaitRestoreAtBootstrap
	WaitSlotMapBehind
	// Steady and converging a shard.
	WaitCloseWrites
	WaitSwitchover
	WaitHibernate
	WaitLeaving
	WaitLeavingNodeNotAnswering
	WaitLeavingNodeHoldsKeys
	WaitRestore
	WaitScaleBlocked
	WaitNotConverged
	WaitFailover
	WaitPrimaryNotAnswering
	WaitHandOverFinishing
	WaitDeposedResync
	WaitStrayGossip
	WaitStrayTakenOver
	WaitStrayHoldsKeys
	WaitGhostsServeSlots
	WaitGhostClaimsForgotten
	WaitOpenSlotsUnknown
	// FailingOver.
	WaitSwitchoverTarget
	WaitElectedNotAnswering
	WaitClaimNotNewest
	WaitOldPrimaryMayWrite
	WaitOpenPrimaryUnplaced
	WaitFailoverQuorum
	WaitNoPromotable
	WaitDeposedMayHoldTheLine
	// Rolling.
	WaitPodsNotReady
	WaitHandOverNotRecorded
	WaitNoHandOverTarget
	WaitRollingPodStopping
	// Resharding.
	WaitShardComingUp
	WaitOpenSlotNoPrimary
	WaitClusterStateFail
	WaitStaleSlotViews
	WaitSharedEpoch
	WaitEpochUnheard
	// Restoring.
	WaitRestoreRefused
	WaitRestoreFence
	WaitRestoreNoNode
	// Hibernated.
	WaitHibernatePodsStopping
	WaitHibernated
	WaitHibernateRecordWake
	WaitHibernateCatchUp
	// The Sentinel topology.
	WaitSentinelsDecide
	WaitSentinelsDisagree
	WaitSentinelFailover
	WaitSentinelNotBuilt
	WaitSentinelPickLacksData
	WaitSentinelsReconfiguring
	WaitSentinelTakeOver
	WaitSentinelsRelearning
	WaitSentinelHandOver
	WaitSentinelsScaling
	WaitSentinelsRolling
	// Password rotation.
	WaitRotationQueued
	WaitRotationPending
	WaitRotationPublishing
	WaitRotationAdding
	WaitRotationPublished
	WaitRotationRetiring
	// WaitOperator is a reason the operator gives outside Decide (a turn that cannot
	// observe), in Detail, for the conditions Observed computes from it.
	WaitOperator
	waitKinds
)

var waitKindNames = [waitKinds]string{
	WaitNone:                    "None",
	WaitUnknownState:            "UnknownState",
	WaitStaleObservation:        "StaleObservation",
	WaitBootstrapElection:       "BootstrapElection",
	WaitDataChoice:              "DataChoice",
	WaitElectedNotAsElected:     "ElectedNotAsElected",
	WaitNoNodeAnswersBecause:    "NoNodeAnswersBecause",
	WaitNoNodeAnswersYet:        "NoNodeAnswersYet",
	WaitNoNodeAnswers:           "NoNodeAnswers",
	WaitRestoreAtBootstrap:      "RestoreAtBootstrap",
	WaitSlotMapBehind:           "SlotMapBehind",
	WaitCloseWrites:             "CloseWrites",
	WaitSwitchover:              "Switchover",
	WaitHibernate:               "Hibernate",
	WaitLeaving:                 "Leaving",
	WaitLeavingNodeNotAnswering: "LeavingNodeNotAnswering",
	WaitLeavingNodeHoldsKeys:    "LeavingNodeHoldsKeys",
	WaitRestore:                 "Restore",
	WaitScaleBlocked:            "ScaleBlocked",
	WaitNotConverged:            "NotConverged",
	WaitFailover:                "Failover",
	WaitPrimaryNotAnswering:     "PrimaryNotAnswering",
	WaitHandOverFinishing:       "HandOverFinishing",
	WaitDeposedResync:           "DeposedResync",
	WaitStrayGossip:             "StrayGossip",
	WaitStrayTakenOver:          "StrayTakenOver",
	WaitStrayHoldsKeys:          "StrayHoldsKeys",
	WaitGhostsServeSlots:        "GhostsServeSlots",
	WaitGhostClaimsForgotten:    "GhostClaimsForgotten",
	WaitOpenSlotsUnknown:        "OpenSlotsUnknown",
	WaitSwitchoverTarget:        "SwitchoverTarget",
	WaitElectedNotAnswering:     "ElectedNotAnswering",
	WaitClaimNotNewest:          "ClaimNotNewest",
	WaitOldPrimaryMayWrite:      "OldPrimaryMayWrite",
	WaitOpenPrimaryUnplaced:     "OpenPrimaryUnplaced",
	WaitFailoverQuorum:          "FailoverQuorum",
	WaitNoPromotable:            "NoPromotable",
	WaitDeposedMayHoldTheLine:   "DeposedMayHoldTheLine",
	WaitPodsNotReady:            "PodsNotReady",
	WaitHandOverNotRecorded:     "HandOverNotRecorded",
	WaitNoHandOverTarget:        "NoHandOverTarget",
	WaitRollingPodStopping:      "RollingPodStopping",
	WaitShardComingUp:           "ShardComingUp",
	WaitOpenSlotNoPrimary:       "OpenSlotNoPrimary",
	WaitClusterStateFail:        "ClusterStateFail",
	WaitStaleSlotViews:          "StaleSlotViews",
	WaitSharedEpoch:             "SharedEpoch",
	WaitEpochUnheard:            "EpochUnheard",
	WaitRestoreRefused:          "RestoreRefused",
	WaitRestoreFence:            "RestoreFence",
	WaitRestoreNoNode:           "RestoreNoNode",
	WaitHibernatePodsStopping:   "HibernatePodsStopping",
	WaitHibernated:              "Hibernated",
	WaitHibernateRecordWake:     "HibernateRecordWake",
	WaitHibernateCatchUp:        "HibernateCatchUp",
	WaitSentinelsDecide:         "SentinelsDecide",
	WaitSentinelsDisagree:       "SentinelsDisagree",
	WaitSentinelFailover:        "SentinelFailover",
	WaitSentinelNotBuilt:        "SentinelNotBuilt",
	WaitSentinelHandOver:        "SentinelHandOver",
	WaitSentinelPickLacksData:   "SentinelPickLacksData",
	WaitSentinelsReconfiguring:  "SentinelsReconfiguring",
	WaitSentinelTakeOver:        "SentinelTakeOver",
	WaitSentinelsRelearning:     "SentinelsRelearning",
	WaitSentinelsScaling:        "SentinelsScaling",
	WaitSentinelsRolling:        "SentinelsRolling",
	WaitRotationQueued:          "RotationQueued",
	WaitRotationPending:         "RotationPending",
	WaitRotationPublishing:      "RotationPublishing",
	WaitRotationAdding:          "RotationAdding",
	WaitRotationPublished:       "RotationPublished",
	WaitRotationRetiring:        "RotationRetiring",
	WaitOperator:                "Operator",
}

func (k WaitKind) String() string {
	if k < waitKinds {
		return waitKindNames[k]
	}
	return fmt.Sprintf("WaitKind(%d)", uint8(k))
}

// WaitKinds lists every kind but WaitNone.
func WaitKinds() []WaitKind {
	out := make([]WaitKind, 0, waitKinds-1)
	for k := WaitNone + 1; k < waitKinds; k++ {
		out = append(out, k)
	}
	return out
}

// IsZero reports whether w gives no reason: nothing to wait for.
func (w Wait) IsZero() bool { return w.Kind == WaitNone }

// String renders w in the words users read.
func (w Wait) String() string {
	switch w.Kind {
	case WaitNone:
		return ""
	case WaitUnknownState:
		return "unknown persisted state " + w.Detail
	case WaitStaleObservation:
		return "observation older than the last transition; observe again"
	case WaitElectedNotAsElected:
		return fmt.Sprintf("shard %d: elected %s does not answer as the elected process", w.Shard, w.Node)
	case WaitNoNodeAnswersBecause:
		return fmt.Sprintf("shard %d: no node answers: %s", w.Shard, w.Detail)
	case WaitNoNodeAnswersYet:
		return fmt.Sprintf("shard %d: no node answers yet", w.Shard)
	case WaitNoNodeAnswers:
		return fmt.Sprintf("shard %d: no node answers", w.Shard)
	case WaitRestoreAtBootstrap:
		return fmt.Sprintf("restore %s: %s (writes open only once it is loaded)", w.ID, w.Detail)
	case WaitSlotMapBehind:
		return fmt.Sprintf("every slot is assigned; waiting for gossip to tell %s", w.Detail)
	case WaitScaleBlocked:
		if w.Also != "" {
			return w.Detail + "; first: " + w.Also
		}
		return w.Detail
	case WaitOpenPrimaryUnplaced:
		return fmt.Sprintf("shard %d: %s, a primary open for writes whose history the record cannot place, must be fenced before the election: until then it may take writes, and its data may be the shard's newest", w.Shard, w.Detail)
	case WaitLeavingNodeNotAnswering:
		return fmt.Sprintf("shard %d goes: %s does not answer, so it cannot be checked empty", w.Shard, w.Node)
	case WaitLeavingNodeHoldsKeys:
		return fmt.Sprintf("shard %d goes: %s still holds %d keys", w.Shard, w.Node, w.N)
	case WaitPrimaryNotAnswering:
		return fmt.Sprintf("shard %d: primary %s not answering", w.Shard, w.Node)
	case WaitSentinelsDecide:
		return fmt.Sprintf("primary %s not answering as the recorded primary; the sentinels decide the failover (the operator promotes a replica only when no sentinel can: every sentinel answering, with fewer than the quorum monitoring the primary or their failover given up): %s", w.Node, w.Detail)
	case WaitSentinelsDisagree:
		return fmt.Sprintf("no majority of the sentinels is seen naming %s, the recorded primary; the replicas are left as they are until one is: %s", w.Node, w.Detail)
	case WaitSentinelsRelearning:
		return fmt.Sprintf("%s knows another sentinel that no longer runs (a sentinel re-created with a new id) or a replica at an address no pod has, and is reset next, once %s has found the others again after its own reset: %s", w.Node, w.Peer, w.Detail)
	case WaitSentinelsScaling:
		return fmt.Sprintf("the sentinels go from %d to %d one at a time, each step once every sentinel answers, monitors the recorded primary and knows exactly the others: %s", w.N, w.Of, w.Detail)
	case WaitSentinelsRolling:
		return fmt.Sprintf("%d of %d sentinels run their template's revision; the others restart one at a time, each once every other sentinel answers, monitors the recorded primary and knows exactly the others: %s", w.N, w.Of, w.Detail)
	case WaitSentinelTakeOver:
		return fmt.Sprintf("primary %s lost and no sentinel can fail it over (%s): the operator removes the group from the sentinels that monitor it (%s), then fails the primary over itself and tells the sentinels the new primary", w.Node, w.Detail, w.Peer)
	case WaitSentinelsReconfiguring:
		return fmt.Sprintf("the sentinels chose %s; %s still reconfigure the replicas, which are left to them until they are done", w.Node, w.Detail)
	case WaitSentinelFailover:
		return "the sentinels are failing over; the new primary is recorded once a majority of them name one that answers: " + w.Detail
	case WaitSentinelPickLacksData:
		return fmt.Sprintf("the sentinels chose %s, which came up fenced: it stays closed to clients and replicas, which would lose data syncing from it: %s. To go on, make a node with the data the primary by hand (REPLICAOF NO ONE on it), then point every sentinel at it (SENTINEL REMOVE and SENTINEL MONITOR with its address)", w.Node, w.Detail)
	case WaitSentinelHandOver:
		return fmt.Sprintf("hand-over from %s to %s through a sentinel: %s", w.Peer, w.Node, w.Detail)
	case WaitSentinelNotBuilt:
		return "the Sentinel topology does not carry out " + w.Detail + " yet: a restore or hibernation needs the sentinels pointed at the pods' new addresses, a password rotation new passwords on the sentinels too"
	case WaitHandOverFinishing:
		return fmt.Sprintf("shard %d: hand-over to %s finishing (%s still says primary)", w.Shard, w.Node, w.Peer)
	case WaitDeposedResync:
		return fmt.Sprintf("shard %d: %s, deposed by a failover, resyncs once its resync is recorded: its volume may hold writes off the line", w.Shard, w.Node)
	case WaitStrayGossip:
		return fmt.Sprintf("shard %d: %s still serves slots in its own view; waiting for gossip to tell it %s's newer claim", w.Shard, w.Node, w.Peer)
	case WaitStrayTakenOver:
		return fmt.Sprintf("shard %d: %s, the recorded primary, takes the shard's slots over from %s with a newer epoch: %s, %s, holds %d key(s) there that are not the shard's data, and resyncs from %s once it serves none", w.Shard, w.Peer, w.Node, w.Node, w.Detail, w.N, w.Peer)
	case WaitStrayHoldsKeys:
		return fmt.Sprintf("shard %d: %s serves the shard's slots and holds %d key(s), while %s, its recorded primary elected for its data, serves none; the operator does not empty a node that serves slots (to give them to %s, empty %s by hand: FLUSHALL, then CLUSTER RESET SOFT)", w.Shard, w.Node, w.N, w.Peer, w.Peer, w.Node)
	case WaitGhostsServeSlots:
		return fmt.Sprintf("node(s) that are no pod of this cluster still serve slots: %s", w.Detail)
	case WaitGhostClaimsForgotten:
		return fmt.Sprintf("shard %d: claims on %s's slots by node(s) no pod answers as any more are forgotten: %s", w.Shard, w.Node, w.Detail)
	case WaitOpenSlotsUnknown:
		return OpenSlotsUnknown + " (close them by hand, CLUSTER SETSLOT <slot> STABLE, after checking where their keys are): " + w.Detail
	case WaitSwitchoverTarget:
		return fmt.Sprintf("%s is not a caught-up replica of %s", w.Node, w.Peer)
	case WaitElectedNotAnswering:
		return fmt.Sprintf("elected %s not answering: %s", w.Node, heldBack(w.Detail, w.Also))
	case WaitFailover:
		return heldBack(w.Detail, w.Also)
	case WaitOldPrimaryMayWrite:
		return fmt.Sprintf("old primary %s may accept writes until %s", w.Node, w.Until.Format("15:04:05.000"))
	case WaitNoPromotable:
		return fmt.Sprintf("shard %d: no node can be promoted: %s", w.Shard, w.Detail)
	case WaitDeposedMayHoldTheLine:
		why := fmt.Sprintf("shard %d: no failover: %s, deposed by a failover and restarted from its append-only file, holds %d keys, more than %s (%d) and than the shard had when it was deposed: "+
			"they may be the shard's writes it synced since, or writes off the line it took before it was deposed, and nothing observed tells which. "+
			"Electing %s could lose writes acknowledged with WAIT that only %s holds. To elect %s and give up the keys only %s holds, name %s in the annotation valkey.fsm.dev/failover-without",
			w.Shard, w.Node, w.N, w.Peer, w.Of, w.Peer, w.Node, w.Peer, w.Node, w.Node)
		if w.Detail != "" {
			return w.Detail + "; " + why
		}
		return why
	case WaitPodsNotReady:
		return fmt.Sprintf("waiting for %s to be Ready (its readiness probe) before the next pod rolls", w.Detail)
	case WaitHandOverNotRecorded:
		return fmt.Sprintf("shard %d: hand-over of %s to %s not recorded yet", w.Shard, w.Node, w.Peer)
	case WaitNoHandOverTarget:
		return fmt.Sprintf("shard %d: no caught-up replica to hand %s over to", w.Shard, w.Node)
	case WaitRollingPodStopping:
		return fmt.Sprintf("rolling: %s stopping", w.Node)
	case WaitShardComingUp:
		return fmt.Sprintf("waiting for shard %d to come up", w.Shard)
	case WaitOpenSlotNoPrimary:
		return fmt.Sprintf("slot %d is open between shards %d and %d, and one of them has no primary answering", w.N, w.Shard, w.ToShard)
	case WaitClusterStateFail:
		return fmt.Sprintf("waiting for %s, which slots move to, to say cluster_state ok", w.Node)
	case WaitEpochUnheard:
		return fmt.Sprintf("waiting for %s, which slots move to, to hear of %s's config epoch %d (its view has %d) before it takes them", w.Node, w.Peer, w.N, w.Of)
	case WaitSharedEpoch:
		return fmt.Sprintf("waiting for %s and %s to part their config epoch %d before slots move from %s (Valkey gives one of them a newer epoch within seconds)", w.Node, w.Peer, w.N, w.Node)
	case WaitRestoreRefused:
		return fmt.Sprintf("shard %d: restore %s: %s; writes stay closed (%s): point restoreFrom at a backup that loads, or put the refused files back and change the spec (a new generation tries the load once more)", w.Shard, w.ID, w.Detail, w.Also)
	case WaitRestoreFence:
		return fmt.Sprintf("shard %d: waiting for primary %s to be fenced before loading the snapshot", w.Shard, w.Node)
	case WaitRestoreNoNode:
		return fmt.Sprintf("shard %d: no node answers to load the snapshot into", w.Shard)
	case WaitHibernatePodsStopping:
		return fmt.Sprintf("hibernating: %s still stopping", w.Detail)
	case WaitHibernated:
		return "hibernated: every pod stopped and the claims keep the data; set spec.hibernate to false to wake the cluster"
	case WaitHibernateRecordWake:
		return "hibernating: the replicas caught up; the node each shard wakes from is recorded before the pods stop"
	case WaitHibernateCatchUp:
		return fmt.Sprintf("hibernating: %s catching up with %s (offset %d of %d) before the pods stop", w.Node, w.Peer, w.N, w.Of)
	case WaitRotationQueued:
		return "password rotation " + w.ID + " waits for " + w.Other + " to complete"
	case WaitRotationPending:
		return "password rotation " + w.ID + ": " + w.Detail
	case WaitRotationPublishing:
		return "password rotation " + w.ID + ": writing the auth Secret for " + w.Detail
	case WaitRotationAdding:
		return "password rotation " + w.ID + ": new passwords not yet accepted by " + w.Detail
	case WaitRotationPublished:
		return "password rotation " + w.ID + ": new passwords published, the old ones work until " + w.Detail
	case WaitRotationRetiring:
		return "password rotation " + w.ID + ": old passwords still accepted by " + w.Detail
	}
	// The kinds whose words another rule gives whole (an election, convergence, a guard's
	// reason), and WaitOperator.
	return w.Detail
}

// NamesShard reports whether Shard is the reason's subject for kind k.
func (k WaitKind) NamesShard() bool {
	switch k {
	case WaitNone, WaitUnknownState, WaitStaleObservation, WaitRestoreAtBootstrap, WaitSlotMapBehind,
		WaitCloseWrites, WaitSwitchover, WaitHibernate, WaitLeaving, WaitRestore, WaitScaleBlocked,
		WaitNotConverged, WaitGhostsServeSlots, WaitOpenSlotsUnknown, WaitPodsNotReady,
		WaitRollingPodStopping, WaitClusterStateFail, WaitStaleSlotViews,
		WaitHibernatePodsStopping, WaitHibernated, WaitHibernateRecordWake,
		WaitRotationQueued, WaitRotationPending, WaitRotationPublishing, WaitRotationAdding,
		WaitRotationPublished, WaitRotationRetiring, WaitOperator, WaitSentinelFailover, WaitSentinelNotBuilt, WaitSentinelsRelearning,
		WaitSentinelsScaling, WaitSentinelsRolling:
		return false
	}
	return true
}

// FailoverHeldBack is why the machine holds back a failover of a lost primary (or the
// re-election after a lost candidate), when this wait is that: "" otherwise.
func (w Wait) FailoverHeldBack() string {
	switch w.Kind {
	case WaitFailover, WaitElectedNotAnswering:
		return w.Also
	case WaitDeposedMayHoldTheLine:
		w.Detail = "" // the primary's fault, which counts probes
		return w.String()
	}
	return ""
}

// heldBack words a primary's fault with the reason its failover is held back, if it is.
func heldBack(fault, why string) string {
	if why == "" {
		return fault
	}
	return fault + "; no failover: " + why
}
