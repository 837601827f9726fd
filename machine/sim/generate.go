package sim

import (
	"math/rand"
)

// Source is where schedules get their choices: a seeded math/rand for the simulate command,
// rapid's draws in the property tests (so rapid can shrink them). Intn returns a value in
// [0, n).
type Source interface {
	Intn(n int, label string) int
}

// RandSource adapts a seeded *rand.Rand.
type RandSource struct{ R *rand.Rand }

func (s RandSource) Intn(n int, _ string) int { return s.R.Intn(n) }

// GenStep draws one step. Weights: operator 40%, write 25%, fault 15%, idle 15%, user 5%.
func GenStep(src Source, t Topology) Step {
	switch k := src.Intn(100, "kind"); {
	case k < 40:
		return Step{Kind: StepOperator}
	case k < 65:
		return Step{Kind: StepWrite, Write: GenWrite(src, t)}
	case k < 80:
		if t.Sentinel != nil && src.Intn(4, "sentinel-fault") == 0 {
			return Step{Kind: StepFault, Fault: GenSentinelFault(src, t)}
		}
		return Step{Kind: StepFault, Fault: GenFault(src, t)}
	case k < 95:
		return Step{Kind: StepIdle}
	default:
		return Step{Kind: StepUser, User: GenUser(src, t)}
	}
}

// Generate draws a schedule of n steps. A third of the manual failovers are handed back
// within the step (Sim.handBack). Half of the user changes that start an operation are
// followed, 1 to 20 steps later, by the user changing their mind (changeOfMind): a spec that
// moves while the operation it started is under way is what the machine's spec-changed and
// hibernate-cancelled edges are for, and two independent draws rarely land in that window.
func Generate(src Source, t Topology, n int) []Step {
	steps := make([]Step, n)
	followUps := map[int]Step{}
	for i := range steps {
		if st, ok := followUps[i]; ok {
			steps[i] = st
			continue
		}
		steps[i] = GenStep(src, t)
		if f := &steps[i].Fault; steps[i].Kind == StepFault && f.Kind == FaultManualFailover {
			// Drawn here rather than in GenFault, whose draws rapid's recorded failures replay.
			f.Back = src.Intn(3, "and back") == 0
		}
		if steps[i].Kind != StepUser {
			continue
		}
		if u, ok := changeOfMind(steps[i].User, t); ok && src.Intn(2, "change of mind") == 0 {
			if at := i + 1 + src.Intn(20, "changed after"); at < n {
				if _, taken := followUps[at]; !taken {
					followUps[at] = Step{Kind: StepUser, User: u}
				}
			}
		}
		if startsRollOrReshard(steps[i].User) && src.Intn(2, "scaled behind") == 0 {
			if at := i + 1 + src.Intn(20, "scaled after"); at < n {
				if _, taken := followUps[at]; !taken {
					followUps[at] = Step{Kind: StepFault, Fault: Fault{Kind: FaultScaleStatefulSet}}
				}
			}
		}
	}
	return steps
}

// startsRollOrReshard reports whether u starts a rollout or a resharding, during which the
// StatefulSets may be scaled behind the operator's back (FaultScaleStatefulSet): drawn on its
// own, that edit rarely lands inside the operation.
func startsRollOrReshard(u UserAction) bool {
	return u.Kind == UserRollout || u.Kind == UserReshard
}

// changeOfMind is the user change that moves the goal of the operation u starts: another shard
// count, a scale-down undone, a hibernation called off, another revision.
func changeOfMind(u UserAction, t Topology) (UserAction, bool) {
	switch u.Kind {
	case UserReshard:
		for _, n := range t.ReshardTo {
			if n != u.Shards {
				return UserAction{Kind: UserReshard, Shards: n}, true
			}
		}
	case UserScaleDown:
		return UserAction{Kind: UserScaleUp}, true
	case UserHibernate:
		return UserAction{Kind: UserWake}, true
	case UserScaleSentinels:
		return UserAction{Kind: UserScaleSentinels, To: 3}, u.To != 3
	case UserRollout:
		return UserAction{Kind: UserRollout}, true
	}
	return UserAction{}, false
}

// GenWrite draws a client write.
func GenWrite(src Source, t Topology) Write {
	return Write{Key: src.Intn(32, "key"), Start: src.Intn(1+t.maxReplicas(), "start"), Wait: src.Intn(2, "wait") == 1}
}

func maxShards(t Topology) int {
	n := t.Shards
	for _, s := range t.ReshardTo {
		n = max(n, s)
	}
	return n
}

func genRef(src Source, t Topology) NodeRef {
	return NodeRef{Shard: src.Intn(maxShards(t), "shard"), Ordinal: src.Intn(1+t.maxReplicas(), "ordinal")}
}

// GenFault draws a fault; kill-primary and partitions that isolate a primary are as likely
// as the other kinds, so that failovers are frequent.
func GenFault(src Source, t Topology) Fault {
	f := Fault{Kind: FaultKinds[src.Intn(len(FaultKinds), "fault")]}
	switch f.Kind {
	case FaultKillPrimary:
		f.Node = NodeRef{Shard: src.Intn(maxShards(t), "shard"), Primary: true}
	case FaultKillNode, FaultDeletePod, FaultEvictPod, FaultIPChange, FaultEmptyRestart, FaultPartitionOperator:
		f.Node = genRef(src, t)
		if src.Intn(2, "primary") == 1 {
			f.Node = NodeRef{Shard: f.Node.Shard, Primary: true}
		}
	case FaultPause:
		f.Node = genRef(src, t)
		if src.Intn(2, "primary") == 1 {
			f.Node = NodeRef{Shard: f.Node.Shard, Primary: true}
		}
		f.Ticks = 1 + src.Intn(10, "ticks")
	case FaultLinkLag:
		f.Node = genRef(src, t)
		f.Ticks = 1 + src.Intn(4, "ticks")
	case FaultManualFailover:
		f.Node = genRef(src, t)
	case FaultPartition, FaultPartitionOneWay:
		if f.Kind == FaultPartitionOneWay {
			f.Outbound = src.Intn(2, "outbound") == 1
		}
		for s := 0; s < maxShards(t); s++ {
			for o := 0; o <= t.maxReplicas(); o++ {
				if src.Intn(2, "side") == 1 {
					f.Nodes = append(f.Nodes, NodeRef{Shard: s, Ordinal: o})
				}
			}
		}
		f.Operator = src.Intn(2, "operator-side") == 1
		f.Client = src.Intn(2, "client-side") == 1
		if t.Sentinel != nil {
			for i := 0; i < t.Sentinel.Sentinels; i++ {
				if src.Intn(2, "sentinel-side") == 1 {
					f.Sentinels = append(f.Sentinels, i)
				}
			}
		}
	case FaultOperatorCrash:
		f.InFlight = src.Intn(2, "in-flight") == 1
		if src.Intn(2, "clock-skewed") == 1 {
			f.Skew = src.Intn(121, "clock-skew") - 60
		}
	case FaultAPIConflict, FaultActuatorFailure:
		f.Count = 1 + src.Intn(3, "count")
	case FaultSlowActuator:
		f.Ticks = 1 + src.Intn(5, "ticks")
	}
	return f
}

// GenSentinelFault draws a fault of a sentinel process (the Sentinel topology).
func GenSentinelFault(src Source, t Topology) Fault {
	f := Fault{Kind: FaultKillSentinel, Sentinel: src.Intn(t.Sentinel.Sentinels, "sentinel")}
	switch src.Intn(4, "sentinel-fault") {
	case 1, 2:
		f.Kind, f.Ticks = FaultPauseSentinel, 1+src.Intn(10, "ticks")
	case 3:
		f.Kind = FaultRenewSentinel
	}
	return f
}

// sentinelUserKinds are the user changes the Sentinel topology carries out: a switchover, a
// rollout and a scale (their hand-overs go through SENTINEL FAILOVER), and none that needs
// new sentinel configuration (a password rotation: the sentinels hold the passwords in their
// own files), or the sentinels pointed at new addresses (a restore, hibernation): those wait
// in this topology.
var sentinelUserKinds = []UserActionKind{UserBackup, UserGrowStorage, UserRenewCertificate, UserSwitchover, UserRollout, UserScaleUp, UserScaleDown, UserScaleSentinels}

// GenUser draws a user change.
func GenUser(src Source, t Topology) UserAction {
	kinds := UserActionKinds
	if t.Sentinel != nil {
		kinds = sentinelUserKinds
	}
	u := UserAction{Kind: kinds[src.Intn(len(kinds), "user")]}
	switch u.Kind {
	case UserSwitchover:
		if u.Clear = src.Intn(3, "clear") == 0; !u.Clear {
			u.To = src.Intn(1+t.maxReplicas(), "to")
		}
	case UserReshard:
		if len(t.ReshardTo) == 0 {
			u.Kind = UserBackup // nothing to reshard in this topology
			break
		}
		u.Shards = t.ReshardTo[src.Intn(len(t.ReshardTo), "shards")]
	case UserRecreate:
		u.To = src.Intn(2+t.maxReplicas(), "lose claim") - 1
	case UserScaleSentinels:
		// Another odd count (the API's rule): one step more or less, or two.
		u.To = 3 + 2*src.Intn(3, "sentinels")
	case UserRestore:
		// One restore in four has its files replaced after the check, half of those found
		// only after the node was emptied.
		u.To = max(0, src.Intn(8, "spoiled")-5)
	}
	return u
}
