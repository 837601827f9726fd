package cluster

import (
	"context"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The actuators of roles: who is primary, whom a replica follows, who takes writes. Each is
// aimed at the process the decision saw (its run id), and refused by another.

func promote(ctx context.Context, x actuation, a machine.Promote) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.Promote(ctx, addr, a.RunID)
}

func detach(ctx context.Context, x actuation, a machine.Detach) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.Detach(ctx, addr, a.RunID)
}

func seal(ctx context.Context, x actuation, a machine.Seal) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.Seal(ctx, addr, a.RunID, x.w.obs.Clock)
}

func unseal(ctx context.Context, x actuation, a machine.Unseal) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.Unseal(ctx, addr, a.RunID, x.w.passwords.Replication)
}

func fence(ctx context.Context, x actuation, a machine.Fence) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.Fence(ctx, addr, a.RunID)
}

func openWrites(ctx context.Context, x actuation, a machine.OpenWrites) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.OpenWrites(ctx, addr, a.RunID)
}

func closeWrites(ctx context.Context, x actuation, a machine.CloseWrites) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.CloseWrites(ctx, addr, a.RunID)
}

func replicaOf(ctx context.Context, x actuation, a machine.ReplicaOf) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	if x.w.obs.Spec.Mode == machine.ModeCluster {
		return x.w.pool.Replicate(ctx, addr, a.RunID, a.PrimaryIP, a.PrimaryRunID, x.w.passwords.Replication)
	}
	return x.w.pool.ReplicaOf(ctx, addr, a.RunID, a.PrimaryIP, x.w.passwords.Replication)
}

func handOver(ctx context.Context, x actuation, a machine.HandOver) error {
	from, err := x.ip(a.From)
	if err != nil {
		return err
	}
	timeout := x.r.Options.HandOverTimeout
	if x.w.obs.Spec.Mode == machine.ModeCluster {
		return x.w.pool.HandOverInCluster(ctx, from, a.FromRunID, a.ToIP, a.ToRunID, timeout+5*time.Second)
	}
	return x.w.pool.HandOver(ctx, from, a.FromRunID, a.ToIP, a.ToRunID, timeout.Milliseconds())
}
