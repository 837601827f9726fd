package cluster

import (
	"context"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// sentinelMonitor tells a sentinel, at the address and with the id the action was decided on,
// to monitor the group (actuators/valkey SentinelMonitor), reaching the data nodes as the
// sentinels' own user.
func sentinelMonitor(ctx context.Context, x actuation, a machine.SentinelMonitor) error {
	return x.w.pool.SentinelMonitor(ctx, a.IP, a.ID, a.PrimaryIP, a.Settings, x.w.passwords.Sentinel)
}

// sentinelRemove makes a sentinel forget the group (actuators/valkey SentinelRemove).
func sentinelRemove(ctx context.Context, x actuation, a machine.SentinelRemove) error {
	return x.w.pool.SentinelRemove(ctx, a.IP, a.ID)
}

// sentinelReset makes a sentinel find the group's replicas and sentinels again (actuators/valkey
// SentinelReset).
func sentinelReset(ctx context.Context, x actuation, a machine.SentinelReset) error {
	return x.w.pool.SentinelReset(ctx, a.IP, a.ID)
}

// holdBack sets a replica to replica-priority 0 before a planned hand-over (actuators/valkey
// HoldBack).
func holdBack(ctx context.Context, x actuation, a machine.HoldBack) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.HoldBack(ctx, addr, a.RunID)
}

// sentinelHandOver hands the primary role over through a sentinel (actuators/valkey
// SentinelHandOver), waiting for the target to catch up as long as a hand-over of the
// Replication topology does.
func sentinelHandOver(ctx context.Context, x actuation, a machine.SentinelHandOver) error {
	from, err := x.ip(a.From)
	if err != nil {
		return err
	}
	return x.w.pool.SentinelHandOver(ctx, a.IP, a.ID, from, a.FromRunID, a.ToIP, a.ToRunID, x.r.Options.HandOverTimeout)
}
