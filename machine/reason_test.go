package machine

import (
	"testing"
	"time"
)

// Each reason renders the words the history has always carried for it: the text is what
// users, their tooling and the simulator's pinned traces read.
func TestReasonsRenderTheirWords(t *testing.T) {
	for _, c := range []struct {
		r    Reason
		want string
	}{
		{Reason{Kind: ReasonHandOverTargetGone, Shard: 1, Goal: GoalSwitchover, Node: "s1-0", Peer: "s1-2"}, "shard 1: switchover to s1-2 abandoned: s1-2 is no longer a caught-up replica"},
		{Reason{Kind: ReasonHandOverTargetGone, Goal: GoalScaleDown, Node: "s0-2", Peer: "s0-1"}, "shard 0: hand-over for the scale-down to s0-1 abandoned: s0-1 is no longer a caught-up replica"},
		{Reason{Kind: ReasonHandOverTargetGone, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-1"}, "shard 0: hand-over before s0-0's pod stops to s0-1 abandoned: s0-1 is no longer a caught-up replica"},
		{Reason{Kind: ReasonSwitchoverWithdrawn, Shard: 2, Node: "s2-0", Peer: "s2-1"}, "shard 2: switchover to s2-1 abandoned: switchover request withdrawn"},
		{Reason{Kind: ReasonSwitchoverChanged, Shard: 0, Node: "s0-0", Peer: "s0-2", ToShard: 1, ToNode: "s1-1"}, "shard 0: switchover to s0-2 abandoned: switchover request changed to shard 1 node s1-1"},
		{Reason{Kind: ReasonScaleUp, Pods: 4, PodsWere: 3}, "scale from 3 to 4 pod(s) per shard: add ordinal 3"},
		{Reason{Kind: ReasonScaleUp, Pods: 5, PodsWere: 2}, "scale from 2 to 5 pod(s) per shard: add ordinals 2-4"},
		{Reason{Kind: ReasonScaleUpKeeping, Pods: 4, PodsWere: 2, PodsKept: 3}, "scale from 2 to 4 pod(s) per shard: keep ordinal 2, not removed yet by the scale-down to 2; add ordinal 3"},
		{Reason{Kind: ReasonScaleUpKeeping, Pods: 3, PodsWere: 2, PodsKept: 4}, "scale from 2 to 3 pod(s) per shard: keep ordinal 2, not removed yet by the scale-down to 2"},
		{Reason{Kind: ReasonScaleDown, Pods: 2, PodsWere: 4}, "scale from 4 to 2 pod(s) per shard: remove ordinals 2-3"},
		{Reason{Kind: ReasonElected, Shard: 1, Node: "s1-2", Peer: "s1-0", Offset: 120}, "shard 1: s1-2 elected (offset 120) to replace s1-0"},
		{Reason{Kind: ReasonElected, Node: "s0-2", Peer: "s0-0", Offset: 0, Instead: "s0-1"}, "shard 0: s0-2 elected (offset 0) instead of s0-1 to replace s0-0"},
		{Reason{Kind: ReasonElected, Node: "s0-2", Peer: "s0-0", Offset: 2, OverByKeys: "s0-0,s0-1", Keys: 5}, "shard 0: s0-2 elected (offset 2) to replace s0-0; chosen over s0-0,s0-1 by key count (5 keys): restarted from append-only files, which keep no replication offset, their data cannot be placed in the history"},
		{Reason{Kind: ReasonReseeded, Shard: 2, Node: "s2-1", Peer: "s2-0"}, "shard 2: DATA LOST: no node holds the data of s2-0; s2-1 starts a new history"},
		{Reason{Kind: ReasonSwitchedOver, Shard: 1, Node: "s1-0", Peer: "s1-1"}, "shard 1: switched over from s1-0 to s1-1"},
		{Reason{Kind: ReasonSwitchedOver, Goal: GoalScaleDown, Node: "s0-2", Peer: "s0-1", Pods: 2}, "shard 0: switched over from s0-2 to s0-1 for the scale-down to 2 pod(s) per shard"},
		{Reason{Kind: ReasonSwitchedOver, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-2"}, "shard 0: switched over from s0-0 to s0-2 before s0-0's pod stops"},
		{Reason{Kind: ReasonBootstrapElected, Node: "s0-1", Keys: 877, Others: "s0-0 empty, s0-2 870 keys", OverByKeys: "s0-2"}, "shard 0: s0-1 (s0-1 877 keys) elected to bootstrap from: its data contains every other node's; s0-0 empty, s0-2 870 keys will sync from it; chosen over s0-2 by key count: restarted from append-only files, which keep no replication offset, their data cannot be placed in a history"},
		{Reason{Kind: ReasonBootstrapElected, Shard: 1, Node: "s1-0", Keys: 5, Same: "s1-1"}, "shard 1: s1-0 (s1-0 5 keys) elected to bootstrap from: its data contains every other node's; s1-1 hold(s) the same data (equal digests): either could have been chosen"},
		{Reason{Kind: ReasonBootstrapElected, Node: "s0-1", Keys: 1000, Others: "s0-0 empty", Empty: "s0-0", Instead: "s0-2"}, "shard 0: s0-1 (s0-1 1000 keys) elected to bootstrap from: its data contains every other node's; s0-0 empty will sync from it; s0-0, the primary when the pods stopped, holds no data now (was its volume lost?) (elected again: s0-2 no longer runs as the process elected before)"},
		{Reason{Kind: ReasonBootstrapChosen, Node: "s0-1", Keys: 12, Others: "s0-0 10 keys, s0-2 not answering"}, "shard 0: s0-1 (s0-1 12 keys) chosen by the user to bootstrap from; DATA DISCARDED on s0-0 10 keys, s0-2 not answering"},
		{Reason{Kind: ReasonBootstrapChosen, Node: "s0-0"}, "shard 0: s0-0 (s0-0 empty) chosen by the user to bootstrap from"},
		{Reason{Kind: ReasonBootstrapWoken, Node: "s0-0", Keys: 900, Others: "s0-1 1000 keys"}, "shard 0: s0-0 (s0-0 900 keys) elected to wake from: it was the primary when the pods stopped, with client writes closed and its replicas caught up; s0-1 1000 keys will sync from it"},
		{Reason{Kind: ReasonBootstrapDataLost, Shard: 2, Node: "s2-0", Peer: "s2-1", Instead: "s2-1"}, "shard 2: DATA LOST: s2-1, elected for its data, no longer runs as that process and no node holds data any more; s2-0 starts empty (elected again: s2-1 no longer runs as the process elected before)"},
		{Reason{Kind: ReasonWired, Shards: 3, SpecShards: 3, Pods: 3}, "3 shard(s) of 3 node(s) wired"},
		{Reason{Kind: ReasonWired, Shards: 1, SpecShards: 1, Pods: 2, PodsKept: 4, Kept: KeptVolumes}, "1 shard(s) of 4 node(s) wired; ordinals 2-3, beyond the spec (started for the volumes kept there from before this cluster), are removed by a scale-down next"},
		{Reason{Kind: ReasonWired, Shards: 1, SpecShards: 1, Pods: 2, PodsKept: 3}, "1 shard(s) of 3 node(s) wired; ordinal 2, beyond the spec (the spec was lowered during the bootstrap), are removed by a scale-down next"},
		{Reason{Kind: ReasonWired, Shards: 3, SpecShards: 2, Pods: 2, PodsKept: 3, Kept: KeptWake, Woken: true}, "3 shard(s) of 3 node(s) wired; ordinal 2, beyond the spec (started for the claims the shards ran on when they stopped), are removed by a scale-down next; 1 shard(s) beyond the spec's 2, woken with the data they held, are removed by a resharding next"},
		{Reason{Kind: ReasonWired, Shards: 3, SpecShards: 2, Pods: 2}, "3 shard(s) of 2 node(s) wired; 1 shard(s) beyond the spec's 2, started for the volumes kept there from before this cluster, are removed by a resharding next"},
		{Reason{Kind: ReasonHibernateCaughtUp, WakeFrom: "s0-0 - s2-1", Primaries: "s0-0 s1-2 s2-1"}, "replicas caught up with their primaries: every pod stops; the wake starts shard 0 from s0-0, shard 1 by its nodes' data (s1-2 no longer serves), shard 2 from s2-1"},
		{Reason{Kind: ReasonWakeFromRestarted, WakeFrom: "- - -", WakeFromWas: "s0-0 - s2-1"}, "the wake starts shard 0 by its nodes' data (s0-0 restarted before it stopped: a crash may have lost writes its replicas hold), shard 2 by its nodes' data (s2-1 restarted before it stopped: a crash may have lost writes its replicas hold)"},
		{Reason{Kind: ReasonFailedOver, Shard: 1, Node: "s1-1", Peer: "s1-0", Fenced: Fenced{How: FencedObserved}}, "shard 1: s1-1 replaces s1-0 (old primary observed fenced)"},
		{Reason{Kind: ReasonFailedOver, Node: "s0-1", Peer: "s0-0", Fenced: Fenced{How: FencedKnownDead}}, "shard 0: s0-1 replaces s0-0 (old primary known dead)"},
		{Reason{Kind: ReasonFailedOver, Node: "s0-1", Peer: "s0-0", Fenced: Fenced{How: FencedPodGone}}, "shard 0: s0-1 replaces s0-0 (old primary's pod gone)"},
		{Reason{Kind: ReasonFailedOver, Node: "s0-1", Peer: "s0-0", Fenced: Fenced{How: FencedRestarted}}, "shard 0: s0-1 replaces s0-0 (old primary restarted fenced)"},
		{Reason{Kind: ReasonFailedOver, Node: "s0-1", Peer: "s0-0", Fenced: Fenced{How: FencedByTimeout, Timeout: 10 * time.Second}}, "shard 0: s0-1 replaces s0-0 (fence timeout 10s passed)"},
		{Reason{Kind: ReasonFailedOver, Node: "s0-1", Peer: "s0-0", Fenced: Fenced{How: FencedByTimeout, Timeout: 10 * time.Second, SealedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)}}, "shard 0: s0-1 replaces s0-0 (fence timeout 10s passed since its replicas were sealed, the last at 03:04:05.006)"},
		{Reason{Kind: ReasonServesAgain, Node: "s0-0"}, "shard 0: s0-0, the primary lost before, serves again: elected for its data"},
		{Reason{Kind: ReasonServesAgain, Node: "s0-0", Slots: true}, "shard 0: s0-0, the primary lost before, serves again: elected for its data and the shard's slots"},
		{Reason{Kind: ReasonElected, Node: "s0-1", Peer: "s0-0", Offset: 6, Deposed: "s0-3, s0-4"}, "shard 0: s0-1 elected (offset 6) to replace s0-0; s0-3, s0-4 deposed (claims without pods: what those volumes hold beyond s0-1's data is off the line)"},
		{Reason{Kind: ReasonElected, Node: "s0-2", Peer: "s0-0", Offset: 9, Deposed: "s0-3", GivenUp: "s0-1"}, "shard 0: s0-2 elected (offset 9) to replace s0-0; s0-3 deposed (claims without pods: what those volumes hold beyond s0-2's data is off the line); WITHOUT s0-1, unseen, by the user's decision (annotation valkey.fsm.dev/failover-without): writes only they hold are given up"},
		{Reason{Kind: ReasonReseeded, Node: "s0-1", Peer: "s0-0", GivenUp: "s0-2,s0-3"}, "shard 0: DATA LOST: no node holds the data of s0-0; s0-1 starts a new history; WITHOUT s0-2,s0-3, unseen, by the user's decision (annotation valkey.fsm.dev/failover-without): writes only they hold are given up"},
		{Reason{Kind: ReasonReseeded, Node: "s0-1", Peer: "s0-0", Deposed: "s0-3"}, "shard 0: DATA LOST: no node holds the data of s0-0; s0-1 starts a new history; s0-3 deposed (claims without pods: what those volumes hold beyond s0-1's data is off the line)"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultPodGone, Primary: "s0-0"}}, "shard 0: pod of primary s0-0 is gone"},
		{Reason{Kind: ReasonPrimaryLost, Shard: 1, Fault: PrimaryFault{Kind: FaultRestarted, Primary: "s1-0", RunID: "run-1b", RunIDWas: "run-1"}}, "shard 1: primary s1-0 restarted (run id run-1b, was run-1)"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultNotPrimary, Primary: "s0-0"}}, "shard 0: primary s0-0 is no longer a primary"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultServesNoSlots, Primary: "s0-0", Server: "s0-1"}}, "shard 0: primary s0-0 serves none of the shard's slots (it takes no write), while s0-1 serves them holding its data"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultContainerRestarted, Primary: "s0-0"}}, "shard 0: primary s0-0 restarted (its container restarted; the new process does not answer yet)"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultNotRunning, Primary: "s0-0"}}, "shard 0: primary s0-0 is not running"},
		{Reason{Kind: ReasonPrimaryLost, Fault: PrimaryFault{Kind: FaultSuspected, Primary: "s0-0", Probes: 3}, Unpromoted: "s0-1", Writer: "s0-0", Preempted: Rolling, Pods: 2}, "shard 0: primary s0-0 unreachable for 3 probes; s0-1 was never promoted: the re-election starts from the history s0-0 wrote; Rolling interrupted, resumed from Steady afterwards; the hand-over for the scale-down to 2 pod(s) per shard is re-planned from Steady afterwards"},
		{Reason{Kind: ReasonHandOverStarted, Shard: 1, Goal: GoalSwitchover, Node: "s1-0", Peer: "s1-2"}, "shard 1: switchover from s1-0 to s1-2 requested"},
		{Reason{Kind: ReasonHandOverStarted, Goal: GoalScaleDown, Node: "s0-3", Peer: "s0-1", Pods: 2}, "shard 0: s0-3 hands over to s0-1 before the scale-down to 2 pod(s) per shard removes its ordinal"},
		{Reason{Kind: ReasonHandOverStarted, Goal: GoalLeaving, Node: "s0-0", Peer: "s0-2"}, "shard 0: s0-0's pod is being deleted (kubectl delete, an eviction, a StatefulSet removing it): it hands over to s0-2 before it stops"},
		{Reason{Kind: ReasonReshard, Shards: 3, SpecShards: 4}, "reshard from 3 to 4 shard(s)"},
		{Reason{Kind: ReasonReshard, Shards: 3, SpecShards: 3, OpenSlots: 2}, "reshard from 3 to 3 shard(s); 2 slot(s) left open by an unfinished migration are finished first"},
		{Reason{Kind: ReasonScaleDown, Pods: 2, PodsWere: 4, Primaries: "- s1-3 s2-2"}, "scale from 4 to 2 pod(s) per shard: remove ordinals 2-3; shard 1: primary s1-3 is on one of them and is handed over first; shard 2: primary s2-2 is on one of them and is handed over first"},
		{Reason{}, ""},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%+v renders\n%q\nwant\n%q", c.r, got, c.want)
		}
	}
}
