package machine

import "github.com/looplab/fsm"

// rule is one row of the transition table: an event, the states it may be taken from, the
// state it leads to, and the pure guard that decides whether the event happens now.
type rule struct {
	event Event
	from  []State
	to    State
	// guard looks at the decider's persisted state and observation and, when the event
	// applies, returns the persisted state to write (State, Seq and Since are filled in by
	// Decide) and a message. It must not have side effects: Decide may evaluate it and drop
	// the result.
	guard func(d *decider) (outcome, bool)
	// when says in words when the guard passes (documentation).
	when string
}

// outcome is what a passing guard produces.
type outcome struct {
	next    Persisted
	message string
	// why, when set, is the reason as a value: the transition's message is its text followed
	// by message.
	why Reason
}

// table is THE transition table. Rows are in priority order: from a given state, Decide
// fires the first row whose guard passes, so a lost primary always wins over planned work.
var table = []rule{
	// Not from Restoring: a restored shard's recorded primary loaded the snapshot, and a load
	// leaves the node with a backlog (real Valkey frees and recreates it), so its first
	// replica's sync renames nothing; a shard not restored yet is fenced from replicas; and a
	// restored shard's primary reports the recorded ID (restored), never a renamed one.
	{EventHistoryRenamed, []State{Steady, FailingOver}, "", guardHistoryRenamed,
		"the recorded primary, the same process, reports a new replication ID and no previous one: Valkey renamed the history of a primary without a replication backlog when its first replica synced; record the new ID as continuing the old one (not while restoring: a node that loaded a snapshot has a backlog, and a shard not restored yet is fenced from replicas)"},
	{EventHistoryTakenBack, []State{Steady, Rolling}, "", guardHistoryTakenBack,
		"the recorded primary, the same process and primary again, reports another history than the recorded, promoted from another one (the recorded or an intermediate primary's): it handed its role over and took it back, or began a hand-over and abandoned it, between two surveys; record its history as continuing the recorded one"},
	{EventPrimaryHandedOver, []State{Steady, Rolling}, "", guardPrimaryHandedOver,
		"the recorded primary follows a replica that took over its history (FAILOVER TO): record the new primary"},
	// The Sentinel topology's rows (sentinel.go): it takes no other row but the bootstrap's
	// and those that move no primary role, and these apply to it alone (decider.applies).
	{EventSentinelEpochReset, []State{Steady, Rolling}, "", guardSentinelEpochReset,
		"Sentinel topology: no sentinel that answers monitors the group under the recorded config epoch or a newer one (they lost their files), those that monitor it name the recorded primary under epoch 0, a majority answer, and the recorded primary answers as a primary: record epoch 0, under which every sentinel is told the recorded primary"},
	{EventSentinelTakeOver, []State{Steady, FailingOver}, FailingOver, guardSentinelTakeOver,
		"Sentinel topology: every sentinel of the spec answers and none monitors the group (the machine removed it from those that did, because fewer than the quorum monitored it or their failover ran twice failover-timeout), and the recorded primary is lost with a node that may be elected (as primary-lost): no sentinel can fail it over, so the machine does, with the Replication topology's election, promotion and fence wait"},
	{EventSentinelClockReset, []State{FailingOver}, "", guardSentinelClockReset,
		"Sentinel topology: the sentinels' failover was recorded on another operator incarnation's clock (a new leader, a restarted operator), which this one cannot measure from: it is timed again from now, for the take-over after twice failover-timeout"},
	{EventSentinelPromoted, []State{FailingOver}, Steady, guardSentinelPrimaryRecorded,
		"Sentinel topology: a majority of the spec's sentinels name one primary under a config epoch newer than the recorded one, and that node answers as a primary: record it and the epoch (the sentinels decided a failover)"},
	{EventSentinelPromoted, []State{Steady}, "", guardSentinelPrimaryRecorded,
		"Sentinel topology: as from FailingOver, for a failover the sentinels decided and carried out between two observations"},
	{EventPrimaryReadmitted, []State{FailingOver}, Steady, guardSentinelPrimaryReadmitted,
		"Sentinel topology: the recorded primary's pod, at the address a majority of the sentinels name under the recorded config epoch, answers as a new process, following nothing, and holds the data of every node of the shard that holds any (enough of the shard seen): the sentinels cannot promote their own master and may have no replica to promote; record the new process, then promote it in place and open it"},
	{EventPrimaryReadmitted, []State{Steady}, "", guardSentinelPrimaryReadmitted,
		"Sentinel topology: as from FailingOver, before the sentinels report a failover"},
	{EventSentinelFailover, []State{Steady, Rolling}, FailingOver, guardSentinelFailover,
		"Sentinel topology: a sentinel that answers reports a failover in progress (or the primary objectively down), or a majority name under a newer config epoch a node that does not answer as a primary yet: record that the sentinels are failing over (the machine never promotes in this topology)"},
	{EventSentinelKeptPrimary, []State{FailingOver}, Steady, guardSentinelFailoverAbandoned,
		"Sentinel topology: no sentinel that answers reports a failover any more, a majority name the recorded primary under the recorded config epoch, and it answers as the recorded process, a primary: the sentinels kept it"},
	{EventPrimaryLost, []State{Steady, Rolling, Resharding}, FailingOver, guardPrimaryLost,
		"the recorded primary of a shard is lost (its pod is gone, it restarted, it is no longer primary, or FailureThreshold probes failed), enough of the shard is visible (all but MinSyncReplicas-1 replicas) and a node that continues its history can be promoted"},
	{EventFailoverComplete, []State{FailingOver}, Steady, guardFailoverComplete,
		"the elected node serves replicas and the old primary cannot accept writes any more (known dead, observed fenced or demoted, or FenceTimeout passed since the election): record its new history; for a planned hand-over (switchover, scale-down): the hand-over happened"},
	{EventPrimaryRecovered, []State{FailingOver}, Steady, guardPrimaryRecovered,
		"before any election was recorded, the lost primary answers again as the same process, still primary of the recorded history: a false alarm"},
	{EventPrimaryLost, []State{FailingOver}, FailingOver, guardPrimaryLost,
		"the elected node (or, during a switchover, the primary) is lost in turn: start over from it"},
	{EventSwitchoverStale, []State{FailingOver}, Steady, guardSwitchoverStale,
		"a requested switchover no longer matches the spec, or the target of the planned hand-over (switchover or scale-down) is no longer a caught-up replica on an ordinal that stays, and the primary is still the recorded one while the target is not a primary continuing its history (the hand-over did not happen, not even half-way)"},
	{EventCandidatePromoted, []State{FailingOver}, FailingOver, guardCandidatePromoted,
		"the elected node serves replicas under a new replication ID: record that history at once, so that nodes which follow it stay recognisable as the shard's even if the elected node is lost before the failover completes"},
	{EventFenceClockRestarted, []State{FailingOver}, FailingOver, guardFenceClockRestarted,
		"the election was timed by another operator incarnation (a new leader, a restarted operator) and the old primary is not known to be unable to write: restart the fence wait on this incarnation's clock, since clocks of different incarnations cannot be compared"},
	{EventCandidateElected, []State{FailingOver}, FailingOver, guardCandidateElected,
		"every visible node stopped following the lost primary and a quorum is visible: record the node whose data contains every other candidate's as the shard's primary, before promoting it (again, if a better one shows up before the promotion)"},
	{EventHibernateRequested, []State{Steady}, Hibernated, guardHibernateRequested,
		"the spec asks to hibernate, the nodes persist their data (profile Durable), every shard's recorded primary serves and no password rotation is in progress: record it, then close client writes, let the replicas catch up and stop every pod; the claims stay"},
	{EventReplicasChanged, []State{Steady}, "", guardReplicasChanged,
		"the spec asks for another number of pods per shard (1 + replicas) than the machine recorded: record the new count. Scale-up: the objects ask for it at once. Scale-down: they ask for it once every shard's recorded primary answers on an ordinal that stays (a StatefulSet removes the highest ordinals) and the nodes that stay follow it (see Scaling below)"},
	{EventScaleDownHandOver, []State{Steady}, FailingOver, guardScaleDownHandOver,
		"a recorded scale-down would remove the ordinal of a shard's recorded primary, the cluster is converged and a caught-up replica on an ordinal that stays can take over: record the hand-over to it (a planned switchover) before the objects shrink"},
	{EventRestoreRequested, []State{Steady}, Restoring, guardRestoreRequested,
		"the spec asks for a restore whose ID was not carried out yet, of a snapshot with as many shards as the cluster"},
	{EventPrimaryLeaving, []State{Steady}, FailingOver, guardPrimaryLeaving,
		"the pod of a shard's recorded primary is being deleted (kubectl delete, an eviction by a drain, a StatefulSet removing it) while the process still runs, held by its preStop hook, and a caught-up replica can take over: record the hand-over to it (a planned switchover, its cause the deletion) before the pod stops"},
	{EventSwitchoverRequested, []State{Steady}, FailingOver, guardSwitchoverRequested,
		"the spec names another node as a shard's primary and it is a caught-up replica of a converged cluster"},
	{EventRolloutNeeded, []State{Steady}, Rolling, guardRolloutNeeded,
		"the cluster is converged and a pod runs another revision than the spec"},
	{EventReshardNeeded, []State{Steady}, Resharding, guardReshardNeeded,
		"cluster mode, the cluster is converged and the shard count or slot layout differs from the spec"},
	{EventCertificateReloaded, []State{Steady}, "", guardCertificateReloaded,
		"the TLS Secret holds a certificate the operator accepted whose serial is not the recorded one, and every running node answers and, if it serves TLS, serves that certificate (one at least): record it"},
	{EventRotationComplete, []State{Steady}, "", guardRotationComplete,
		"a password rotation is retiring the old passwords and no running node accepts them any more: the rotation is complete"},
	{EventGraceEnded, []State{Steady}, "", guardGraceEnded,
		"a password rotation's new passwords are published, its grace period passed on this incarnation's clock (or the user asked to retire the old passwords now), and every running node accepts the new passwords and authenticates to its primary with the new replication password: remove the old ones"},
	{EventGraceClockRestarted, []State{Steady}, "", guardGraceClockRestarted,
		"a password rotation's grace period was timed on another operator incarnation's clock: start it again on this one (clocks of different incarnations cannot be compared)"},
	{EventPasswordsAccepted, []State{Steady}, "", guardPasswordsAccepted,
		"every running node answers and accepts the new passwords of the rotation in progress beside the old ones: publish them (the auth Secret, the users' file) and start the grace period"},
	{EventRotationRequested, []State{Steady}, "", guardRotationRequested,
		"the spec asks for a password rotation whose ID was not carried out yet, its new passwords are prepared, and none is in progress: record it, then add the new passwords to every node"},
	{EventRollHandOver, []State{Rolling}, FailingOver, guardRollHandOver,
		"Sentinel topology: the next rolling step is a shard's primary, a caught-up replica opened as a sync source can take over, and the sentinels are ready for a hand-over (as switchover-requested): record the hand-over to it, carried out through a sentinel (SENTINEL FAILOVER) as a switchover is; the rollout continues from Steady once the sentinels' pick is recorded"},
	{EventHandOverStarted, []State{Rolling}, Rolling, guardHandOverStarted,
		"the next rolling step is a shard's primary and a caught-up replica can take over: record it before the hand-over is asked for"},
	{EventSpecChanged, []State{Rolling, Resharding, FailingOver}, Steady, guardSpecChanged,
		"the spec moved the goal of the planned operation (another revision during a rollout, another shard count during a resharding, another replica count during a scale-down hand-over), and the recorded hand-over, if any, has not happened: abort and re-plan from Steady"},
	{EventRolloutComplete, []State{Rolling}, Steady, guardRolloutComplete,
		"every pod runs the target revision and the cluster is converged"},
	{EventShardAdded, []State{Resharding}, Resharding, guardShardAdded,
		"a new shard's nodes are up, wired to their first node and joined: record its primary"},
	{EventShardRemoved, []State{Resharding}, Resharding, guardShardRemoved,
		"the last recorded shards beyond the target serve no slot and every node of theirs answers off the cluster bus: forget their records before their pods are deleted (their loss is no failover)"},
	{EventReshardComplete, []State{Resharding}, Steady, guardReshardComplete,
		"the slots match the plan for the target shard count and the removed shards' pods are gone"},
	{EventRestoreRequested, []State{Restoring}, Restoring, guardRestoreReplaced,
		"the spec asks for another restore, checked, of a snapshot with as many shards as the cluster, than the one under way, which has not completed: restore it instead (every shard loads the newer snapshot)"},
	{EventRestoreGivenBack, []State{Restoring}, Steady, guardRestoreGivenBack,
		"a load of the restore under way was refused for what the snapshot holds, the restore was asked of a serving cluster, no shard has been recorded as loaded, and every shard's recorded primary still answers as that process, a primary under the recorded history: give the cluster back as it was (writes open again)"},
	{EventSnapshotLoaded, []State{Restoring}, Restoring, guardSnapshotLoaded,
		"a node of a shard not restored yet has loaded the snapshot: record it as the shard's primary"},
	{EventRestoreComplete, []State{Restoring}, Steady, guardRestoreComplete,
		"every shard's recorded primary holds the snapshot and its replicas follow it"},
	{EventHibernateCaughtUp, []State{Hibernated}, Hibernated, guardHibernateCaughtUp,
		"every recorded primary that serves has its client writes closed and every replica that follows it holds all it wrote: record, per shard, the node the wake starts from (the primary that served), before the pods are asked to stop; again, without it, when a recorded node is seen restarted before its pod stopped (a crash may have lost writes its replicas hold)"},
	{EventHibernateCancelled, []State{Hibernated}, Steady, guardHibernateCancelled,
		"the spec no longer asks to hibernate before the pods were stopped, and every shard's recorded primary still serves as the recorded process: keep the records and open writes again (a bootstrap would elect by data, and a primary's data cannot always be told from a replica's)"},
	{EventWakeRequested, []State{Hibernated}, Bootstrapping, guardWakeRequested,
		"the spec no longer asks to hibernate: bootstrap again on the kept claims, every pod the shards ran when they stopped, waiting for every pod to answer before each shard's first node is chosen by its data"},
	{EventBootstrapElected, []State{Bootstrapping}, Bootstrapping, guardBootstrapElected,
		"nodes hold data at bootstrap (volumes kept from a deleted cluster), every node whose volume is older than the cluster answers, and one node's data contains every other's (by replication history, or by key count where nodes restarted from append-only files cannot say), or the user named the pod to bootstrap from: record it as the shard's first node before anything syncs from it (again, if the elected process is gone)"},
	{EventRestoreRequested, []State{Bootstrapping}, Restoring, guardBootstrapRestore,
		"a new cluster is to be restored from a snapshot and is wired as bootstrap-complete asks: record the primaries and restore before any client write is let in"},
	{EventBootstrapComplete, []State{Bootstrapping}, Steady, guardBootstrapComplete,
		"every pod exists, each shard's first node serves replicas, the others follow it, slots are assigned: record the primaries"},
	{EventDeposedResynced, []State{Steady, Rolling, Resharding, Restoring, FailingOver}, "", guardDeposedResynced,
		"a pod recorded as deposed (the primary an unplanned failover replaced, whose volume may hold writes off the shard's line) answers with the line's data or none: it no longer holds writes off the line; forget it"},
	{EventDeposedResync, []State{Steady, Rolling, Resharding, Restoring, FailingOver}, "", guardDeposedResync,
		"a pod recorded as deposed answers, off the line, while the shard's recorded primary serves: record that it resyncs, with its key count, before it is asked to follow (restarted before it is seen on the line, it counts as what it was deposed with unless it holds more keys: only a sync gives it more)"},
}

// rulesFrom lists the rows that may fire from state, in priority order. Precomputed: Decide
// runs often.
var rulesFrom = func() map[State][]*rule {
	m := map[State][]*rule{}
	for i := range table {
		r := &table[i]
		for _, src := range r.from {
			m[src] = append(m[src], r)
		}
	}
	return m
}()

// ruleFor finds the row for an event taken from a state.
func ruleFor(e Event, src State) *rule {
	for _, r := range rulesFrom[src] {
		if r.event == e {
			return r
		}
	}
	return nil
}

// dst is where an event taken from src leads: a row with no destination is a self-loop.
func (r *rule) dst(src State) State {
	if r.to == "" {
		return src
	}
	return r.to
}

// fsmEvents is the table in looplab's form. A row whose destination is empty is a self-loop
// from each of its sources, so it becomes one EventDesc per source.
var fsmEvents = func() fsm.Events {
	var events fsm.Events
	for i := range table {
		r := &table[i]
		if r.to != "" {
			events = append(events, fsm.EventDesc{Name: string(r.event), Src: statesToStrings(r.from), Dst: string(r.to)})
			continue
		}
		for _, src := range r.from {
			events = append(events, fsm.EventDesc{Name: string(r.event), Src: []string{string(src)}, Dst: string(src)})
		}
	}
	return events
}()

func statesToStrings(states []State) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// Edge is one (event, from, to) triple of the table, for documentation and for checks that
// every transition taken is in the table.
type Edge struct {
	Event Event
	From  State
	To    State
	// When says in words when the event is taken.
	When string
}

// Table lists every edge of the transition table in priority order.
func Table() []Edge {
	var edges []Edge
	for i := range table {
		r := &table[i]
		for _, src := range r.from {
			edges = append(edges, Edge{Event: r.event, From: src, To: r.dst(src), When: r.when})
		}
	}
	return edges
}

// InTable reports whether the transition is an edge of the table.
func InTable(t Transition) bool {
	r := ruleFor(t.Event, t.From)
	return r != nil && r.dst(t.From) == t.To
}
