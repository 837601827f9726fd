package sim

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The Sentinel topology's planned hand-over in the simulated world, as the real actuators
// carry it out (actuators/valkey HoldBack and SentinelHandOver): a replica held back reports
// replica-priority 0 in its INFO until an action sets its replication user again; the
// hand-over closes the primary's client writes, checks the target holds everything the
// primary does, and sends SENTINEL FAILOVER, after which the sentinel's forced failover runs
// as any other (sentinel_failover.go). A write the target lacks when the sentinel promotes it
// is the operator's loss, not Sentinel's: the operator asked for that failover.

// holdBack carries out a HoldBack: replica-priority 0 on a replica, its replication user on.
func (w *World) holdBack(n *node) error {
	if n.role != machine.RoleReplica {
		return fmt.Errorf("%s is not a replica", n.name)
	}
	n.heldBack = true
	return nil
}

// sentinelHandOver carries out a SentinelHandOver: through the sentinel the action names, on
// the primary and target it names (each the process it was decided for). The real actuator
// waits a moment for the target to receive the primary's last bytes; here a linked replica
// holds them at once, so one that is not at the primary's offset is refused at once.
func (w *World) sentinelHandOver(a machine.SentinelHandOver) error {
	s, err := w.sentinelFor(a.SentinelTarget)
	if err != nil {
		return err
	}
	from, to, err := w.handOverEnds(a.HandOver)
	if err != nil {
		return err
	}
	if from.role != machine.RolePrimary {
		return fmt.Errorf("%s is not a primary", from.name)
	}
	wasFenced := from.writesFenced
	from.writesFenced = true
	refuse := func(format string, args ...any) error {
		from.writesFenced = wasFenced
		return fmt.Errorf(format, args...)
	}
	if to.role != machine.RoleReplica || to.masterIP != from.ip || !to.linkUp || to.offset() != from.offset() {
		return refuse("%s does not hold everything %s holds", to.name, from.name)
	}
	m := s.m
	switch {
	case m == nil:
		return refuse("%s: ERR No such master with that name", a.Sentinel)
	case m.failover != failoverNone:
		return refuse("%s: INPROG Failover already in progress", a.Sentinel)
	case w.sentinels.selectReplica(s) == nil:
		return refuse("%s: NOGOODSLAVE No suitable replica to promote", a.Sentinel)
	}
	sw := w.sentinels
	sw.event(s, "+user-failover", s.currentEpoch+1, "SENTINEL FAILOVER %s (the operator's hand-over to %s)", sentinelMasterName, to.name)
	sw.startFailover(s)
	m.forced, m.byOperator = true, true
	return nil
}
