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
