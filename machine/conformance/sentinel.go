package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// SentinelTable is the actuator contract of the actions on sentinels. Its world is a
// replication group (shard 0: a primary at ordinal 0, two replicas) and three sentinels that
// answer and monitor nothing, as the Sentinel topology's sentinels start; rows run in order.
var SentinelTable = []Row{
	{
		Name: "sentinel-monitor for another sentinel process is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			t, err := otherProcess(b, 0)
			if err != nil {
				return nil, err
			}
			return machine.SentinelMonitor{SentinelTarget: t, Primary: name(b, 0), PrimaryIP: ip(b, 0), Settings: firstSettings}, nil
		},
		Refused: true,
		Effect:  "sentinel 0 answering, monitoring nothing",
		Expect: func(_, a machine.Observation) bool {
			s := sentinelAt(a, 0)
			return s != nil && s.Reachable && !s.Monitoring
		},
	},
	{
		Name: "sentinel-monitor tells a sentinel that monitors nothing the primary, under config epoch 0, with the settings",
		Action: func(b machine.Observation) (machine.Action, error) {
			return monitorAction(b, 0, 0, firstSettings)
		},
		Effect: "sentinel 0 monitoring the primary at ordinal 0 under epoch 0 with the first settings",
		Expect: func(b, a machine.Observation) bool {
			s := sentinelAt(a, 0)
			return s != nil && s.Reachable && s.Monitoring && s.PrimaryIP == ip(b, 0) && s.ConfigEpoch == 0 &&
				s.Settings == firstSettings && !s.FailingOver && !s.PrimaryDown
		},
	},
	{
		Name: "sentinel-monitor on a sentinel that monitors the group changes its settings and never the primary it names",
		Action: func(b machine.Observation) (machine.Action, error) {
			return monitorAction(b, 0, 1, secondSettings)
		},
		Effect: "sentinel 0 still naming the primary at ordinal 0, with the second settings",
		Expect: func(b, a machine.Observation) bool {
			s := sentinelAt(a, 0)
			return s != nil && s.Monitoring && s.PrimaryIP == ip(b, 0) && s.Settings == secondSettings
		},
	},
	{
		Name: "sentinel-monitor tells the other sentinels too, each on its own",
		Action: func(b machine.Observation) (machine.Action, error) {
			return monitorAction(b, 1, 0, firstSettings)
		},
		Effect: "sentinel 1 monitoring the primary at ordinal 0 under epoch 0; sentinel 2 still monitoring nothing",
		Expect: func(b, a machine.Observation) bool {
			s, other := sentinelAt(a, 1), sentinelAt(a, 2)
			return s != nil && s.Monitoring && s.PrimaryIP == ip(b, 0) && s.ConfigEpoch == 0 && s.Settings == firstSettings &&
				other != nil && other.Reachable && !other.Monitoring
		},
	},
	{
		Name: "sentinel-reset for another sentinel process is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			t, err := otherProcess(b, 0)
			if err != nil {
				return nil, err
			}
			return machine.SentinelReset{SentinelTarget: t}, nil
		},
		Refused: true,
		Effect:  "sentinel 0 still monitoring the primary at ordinal 0 with the second settings",
		Expect: func(b, a machine.Observation) bool {
			s := sentinelAt(a, 0)
			return s != nil && s.Monitoring && s.PrimaryIP == ip(b, 0) && s.Settings == secondSettings
		},
	},
	{
		Name: "sentinel-reset keeps the primary a sentinel names, the config epoch and the settings, and no other sentinel's view",
		Action: func(b machine.Observation) (machine.Action, error) {
			return resetAction(b, 0)
		},
		Effect: "sentinel 0 monitoring the primary at ordinal 0 under epoch 0 with the second settings, no failover; sentinel 1 as it was",
		Expect: func(b, a machine.Observation) bool {
			s, other := sentinelAt(a, 0), sentinelAt(a, 1)
			return s != nil && s.Reachable && s.Monitoring && s.PrimaryIP == ip(b, 0) && s.ConfigEpoch == 0 &&
				s.Settings == secondSettings && !s.FailingOver && !s.PrimaryDown &&
				other != nil && other.Monitoring && other.PrimaryIP == ip(b, 0) && other.Settings == firstSettings
		},
	},
	{
		Name: "sentinel-reset on a sentinel that monitors nothing does nothing",
		Action: func(b machine.Observation) (machine.Action, error) {
			return resetAction(b, 2)
		},
		Effect: "sentinel 2 answering, monitoring nothing",
		Expect: func(_, a machine.Observation) bool {
			s := sentinelAt(a, 2)
			return s != nil && s.Reachable && !s.Monitoring
		},
	},
	{
		Name: "roll-sentinel for another sentinel process is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			t, err := otherProcess(b, 0)
			if err != nil {
				return nil, err
			}
			return machine.RollSentinel{SentinelTarget: t, Revision: rolledRevision}, nil
		},
		Refused: true,
		Effect:  "sentinel 0 answering with the same id, still monitoring the primary at ordinal 0",
		Expect: func(b, a machine.Observation) bool {
			s, was := sentinelAt(a, 0), sentinelAt(b, 0)
			return s != nil && was != nil && s.Reachable && s.ID == was.ID && s.Monitoring && s.PrimaryIP == ip(b, 0)
		},
	},
	{
		Name: "roll-sentinel restarts a sentinel from its file: the same id, the group, the primary it named and the settings",
		Action: func(b machine.Observation) (machine.Action, error) {
			s := sentinelAt(b, 0)
			if s == nil || !s.Reachable {
				return nil, fmt.Errorf("sentinel 0 does not answer")
			}
			return machine.RollSentinel{SentinelTarget: machine.SentinelTargetOf(*s), Revision: rolledRevision}, nil
		},
		Effect: "sentinel 0 answering again with its id, monitoring the primary at ordinal 0 under epoch 0 with the second settings, and knowing sentinel 1",
		Expect: func(b, a machine.Observation) bool {
			s, was := sentinelAt(a, 0), sentinelAt(b, 0)
			return s != nil && was != nil && s.Reachable && !s.Terminating && s.ID == was.ID && s.Monitoring && s.PrimaryIP == ip(b, 0) &&
				s.ConfigEpoch == 0 && s.Settings == secondSettings && s.Peers >= 1
		},
	},
	{
		Name: "sentinel-remove for another sentinel process is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			t, err := otherProcess(b, 1)
			if err != nil {
				return nil, err
			}
			return machine.SentinelRemove{SentinelTarget: t}, nil
		},
		Refused: true,
		Effect:  "sentinel 1 still monitoring the primary at ordinal 0",
		Expect: func(b, a machine.Observation) bool {
			s := sentinelAt(a, 1)
			return s != nil && s.Monitoring && s.PrimaryIP == ip(b, 0)
		},
	},
	{
		Name: "sentinel-remove makes a sentinel forget the group, and no other",
		Action: func(b machine.Observation) (machine.Action, error) {
			return removeAction(b, 1)
		},
		Effect: "sentinel 1 answering, monitoring nothing; sentinel 0 still monitoring the primary at ordinal 0",
		Expect: func(b, a machine.Observation) bool {
			s, other := sentinelAt(a, 1), sentinelAt(a, 0)
			return s != nil && s.Reachable && !s.Monitoring && other != nil && other.Monitoring && other.PrimaryIP == ip(b, 0)
		},
	},
	{
		Name: "sentinel-remove on a sentinel that monitors nothing does nothing",
		Action: func(b machine.Observation) (machine.Action, error) {
			return removeAction(b, 2)
		},
		Effect: "sentinel 2 answering, monitoring nothing",
		Expect: func(_, a machine.Observation) bool {
			s := sentinelAt(a, 2)
			return s != nil && s.Reachable && !s.Monitoring
		},
	},
	{
		Name: "hold-back sets a replica's replica-priority to 0 and leaves it linked; a sentinel reads the priority from its INFO",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.HoldBack{Target: machine.Target{Node: name(b, 2), RunID: runID(b, 2)}}, nil
		},
		Effect: "the replica at ordinal 2 held back and linked; sentinel 0 knowing it at priority 0 and the one at ordinal 1 above 0",
		Expect: func(b, a machine.Observation) bool {
			n, s := node(a, 2), sentinelAt(a, 0)
			return n != nil && n.Valkey.HeldBack && n.Valkey.Role == machine.RoleReplica && n.Valkey.LinkUp &&
				s != nil && knownAt(*s, ip(b, 2)) == 0 && knownAt(*s, ip(b, 1)) > 0
		},
	},
	{
		Name: "sentinel-hand-over for another sentinel process is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			t, err := otherProcess(b, 0)
			if err != nil {
				return nil, err
			}
			return handOverAction(b, t), nil
		},
		Refused: true,
		Effect:  "the primary at ordinal 0, sentinel 0 naming it with no failover",
		Expect: func(b, a machine.Observation) bool {
			s := sentinelAt(a, 0)
			return primaryOf(a) == 0 && s != nil && s.PrimaryIP == ip(b, 0) && !s.FailingOver
		},
	},
	{
		Name: "sentinel-hand-over has the sentinel fail the primary over to the one replica not held back",
		Action: func(b machine.Observation) (machine.Action, error) {
			s := sentinelAt(b, 0)
			if s == nil || !s.Reachable {
				return nil, fmt.Errorf("sentinel 0 does not answer")
			}
			return handOverAction(b, machine.SentinelTargetOf(*s)), nil
		},
		Effect: "sentinel 0 naming the node at ordinal 1 under a config epoch above 0, which answers as the only primary",
		Expect: func(b, a machine.Observation) bool {
			s, old := sentinelAt(a, 0), node(a, 0)
			return s != nil && s.PrimaryIP == ip(b, 1) && s.ConfigEpoch > 0 && primaryOf(a) == 1 &&
				old != nil && old.Valkey.Role == machine.RoleReplica
		},
	},
}

// handOverAction hands the primary at ordinal 0 over to the replica at ordinal 1 through the
// sentinel t.
func handOverAction(b machine.Observation, t machine.SentinelTarget) machine.Action {
	return machine.SentinelHandOver{SentinelTarget: t, HandOver: machine.HandOver{From: name(b, 0), FromRunID: runID(b, 0), To: name(b, 1), ToRunID: runID(b, 1), ToIP: ip(b, 1)}}
}

// knownAt is the replica-priority sentinel s knows the replica at address ip with (-1: it
// does not know it).
func knownAt(s machine.Sentinel, ip string) int {
	for _, r := range s.Replicas {
		if r.IP == ip {
			return r.Priority
		}
	}
	return -1
}

// removeAction makes sentinel i forget the group.
func removeAction(b machine.Observation, i int) (machine.Action, error) {
	s := sentinelAt(b, i)
	if s == nil || !s.Reachable {
		return nil, fmt.Errorf("sentinel %d does not answer", i)
	}
	return machine.SentinelRemove{SentinelTarget: machine.SentinelTargetOf(*s)}, nil
}

// otherProcess is sentinel i's target with an id it does not answer with: an action decided
// for a sentinel process that is gone.
func otherProcess(b machine.Observation, i int) (machine.SentinelTarget, error) {
	s := sentinelAt(b, i)
	if s == nil {
		return machine.SentinelTarget{}, fmt.Errorf("no sentinel %d", i)
	}
	t := machine.SentinelTargetOf(*s)
	t.ID = "not-" + t.ID
	return t, nil
}

// resetAction makes sentinel i find the group's replicas and sentinels again.
func resetAction(b machine.Observation, i int) (machine.Action, error) {
	s := sentinelAt(b, i)
	if s == nil || !s.Reachable {
		return nil, fmt.Errorf("sentinel %d does not answer", i)
	}
	return machine.SentinelReset{SentinelTarget: machine.SentinelTargetOf(*s)}, nil
}

// rolledRevision is the template revision roll-sentinel restarts a sentinel onto: one no
// sentinel runs, so the restart is due.
const rolledRevision = "conformance-next"

// The settings the rows give: Sentinel's own defaults are other (30 s, 180 s), so a row that
// took no effect is seen.
var (
	firstSettings  = machine.SentinelSettings{Quorum: 2, DownAfterMillis: 5000, FailoverTimeoutMillis: 60000, ParallelSyncs: 1}
	secondSettings = machine.SentinelSettings{Quorum: 3, DownAfterMillis: 7000, FailoverTimeoutMillis: 90000, ParallelSyncs: 2}
)

// monitorAction tells sentinel i the node at ordinal ord with settings.
func monitorAction(b machine.Observation, i, ord int, settings machine.SentinelSettings) (machine.Action, error) {
	s := sentinelAt(b, i)
	if s == nil || !s.Reachable {
		return nil, fmt.Errorf("sentinel %d does not answer", i)
	}
	return machine.SentinelMonitor{SentinelTarget: machine.SentinelTargetOf(*s), Primary: name(b, ord), PrimaryIP: ip(b, ord), Settings: settings}, nil
}

// sentinelAt is the observation's sentinel i (by the order the world lists them).
func sentinelAt(o machine.Observation, i int) *machine.Sentinel {
	if i < len(o.Sentinels) {
		return &o.Sentinels[i]
	}
	return nil
}

// RunSentinel plays SentinelTable on w, reporting each row.
func RunSentinel(ctx context.Context, w Observer, report func(row Row, err error)) {
	o, err := w.Observe(ctx)
	if err == nil {
		err = sentinelBefore(o)
	}
	if err != nil {
		report(Row{Name: "the world before the table"}, fmt.Errorf("want a primary at ordinal 0, two replicas and three sentinels monitoring nothing: %v: %s", err, DescribeSentinels(o)))
		return
	}
	for _, row := range SentinelTable {
		report(row, play(ctx, w, row))
	}
}

// sentinelBefore says what the world before SentinelTable lacks (nil: nothing).
func sentinelBefore(o machine.Observation) error {
	if primaryOf(o) != 0 {
		return fmt.Errorf("the primary is at ordinal %d", primaryOf(o))
	}
	if len(o.Sentinels) != 3 {
		return fmt.Errorf("%d sentinels", len(o.Sentinels))
	}
	for _, s := range o.Sentinels {
		if !s.Reachable || s.Monitoring || s.ID == "" || s.IP == "" {
			return fmt.Errorf("sentinel %s: reachable %v, monitoring %v, id %q, ip %q", s.Name, s.Reachable, s.Monitoring, s.ID, s.IP)
		}
	}
	return nil
}

// DescribeSentinels is an observation's nodes and sentinels in one line.
func DescribeSentinels(o machine.Observation) string {
	var b strings.Builder
	b.WriteString(Describe(o))
	for _, s := range o.Sentinels {
		fmt.Fprintf(&b, " %s(%s id=%s reachable %v monitoring %v primary=%s epoch=%d failover=%v odown=%v %+v)",
			s.Name, s.IP, s.ID, s.Reachable, s.Monitoring, s.PrimaryIP, s.ConfigEpoch, s.FailingOver, s.PrimaryDown, s.Settings)
	}
	return b.String()
}
