package valkey

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// ErrOtherProcess refuses an action decided for a process that is gone: the node restarted
// (or is another pod at that address) since the observation the decision was taken on.
var ErrOtherProcess = errors.New("the node runs another process than the one the action was decided for")

// Each method is idempotent: the machine decides actions again from every observation, so
// repeating one that already took effect must do no harm.

// guard runs steps on the node at podIP only if it still runs process runID.
func (p *Pool) guard(ctx context.Context, podIP, runID string, steps func(ctx context.Context, c vk.Client) error) error {
	return p.guardFor(ctx, podIP, runID, p.opts.Timeout, steps)
}

// guardFor is guard with a deadline of its own (bulkTimeout for a bulk action).
func (p *Pool) guardFor(ctx context.Context, podIP, runID string, timeout time.Duration, steps func(ctx context.Context, c vk.Client) error) error {
	return p.runFor(ctx, Addr(podIP), timeout, func(ctx context.Context, c vk.Client) error {
		text, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
		if err != nil {
			return err
		}
		if got := parseInfo(text)["run_id"]; got != runID {
			return fmt.Errorf("%w (decided for %s, found %s)", ErrOtherProcess, runID, got)
		}
		return steps(ctx, c)
	})
}

func doAll(ctx context.Context, c vk.Client, cmds ...vk.Completed) error {
	for i, r := range c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("%s: %w", cmds[i].Commands(), err)
		}
	}
	return nil
}

func setUser(c vk.Client, user string, on bool) vk.Completed {
	rule := "off"
	if on {
		rule = "on"
	}
	return c.B().AclSetuser().Username(user).Rule(rule).Build()
}

// Promote makes the node a primary (REPLICAOF NO ONE) and lets replicas sync from it. Client
// writes are fenced first (the client user, on while it was a replica serving reads, goes off
// and its connections are closed) and stay fenced until OpenWrites: the machine opens them
// only once the old primary cannot take writes any more.
//
// In cluster mode REPLICAOF is refused: a node that is a primary already (a new node, which
// starts as a primary without slots) is only opened to replicas, and a replica takes its
// primary's slots over with CLUSTER FAILOVER TAKEOVER, which needs no vote of the other
// primaries (the machine has fenced and compared the shard's nodes first, as for REPLICAOF
// NO ONE; the old primary, if it comes back, finds a newer epoch for its slots and turns
// into a replica by itself).
func (p *Pool) Promote(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		if err := doAll(ctx, c, setUser(c, UserClient, false), c.B().ClientKill().User(UserClient).Build()); err != nil {
			return err
		}
		text, err := c.Do(ctx, c.B().Info().Section("replication").Section("cluster").Build()).ToString()
		if err != nil {
			return err
		}
		info := parseInfo(text)
		promote := c.B().Replicaof().No().One().Build()
		if info["cluster_enabled"] == "1" {
			if info["role"] == "master" {
				// A primary elected in place keeps the claim it had, which may be older than
				// one a node it has not heard from since made on the same slots (a takeover
				// behind a partition): the newer claim would win the slots back when heard.
				// A new epoch, newer than any this node knows; the machine opens it only once
				// the epoch is newer than every claim it has seen (machine/claims.go).
				if v, err := clusterView(ctx, c); err != nil {
					return err
				} else if me, _ := v.Myself(); len(me.Slots) > 0 {
					if err := doAll(ctx, c, bumpEpoch(c)...); err != nil {
						return err
					}
				}
				return doAll(ctx, c, p.replicationUser(c, true)...)
			}
			promote = c.B().ClusterFailover().Takeover().Build()
		}
		return doAll(ctx, c, p.replicationUser(c, true, promote)...)
	})
}

// Detach freezes a replica's data where it is: it stops following its (lost) primary
// without changing role, data or replication id, by following the placeholder instead (the
// address nothing answers at, as at start-up). Valkey keeps its replication id and offset
// when it switches primaries, so the node stays comparable with its peers by offset until
// one of them is elected.
//
// In cluster mode, where REPLICAOF is refused, the node keeps its primary but loses the
// password it authenticates with, and its link is closed: it cannot sync again until
// Replicate (the cluster-mode ReplicaOf) gives the password back.
func (p *Pool) Detach(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		text, err := c.Do(ctx, c.B().Info().Section("cluster").Build()).ToString()
		if err != nil {
			return err
		}
		if parseInfo(text)["cluster_enabled"] == "1" {
			return doAll(ctx, c,
				c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", detachedPassword).Build(),
				c.B().ClientKill().TypeMaster().Build(),
			)
		}
		return doAll(ctx, c, c.B().Replicaof().Host(PlaceholderHost).Port(PlaceholderPort).Build())
	})
}

// detachedPassword is the replication password of a detached cluster-mode replica: not the
// replication user's (a password of letters and digits), so the primary refuses it.
const detachedPassword = "detached-by-the-operator"

// Fence stops the node from taking client writes and from serving replicas: both users off,
// and their existing connections closed (turning a user off does not disconnect it).
func (p *Pool) Fence(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		if err := doAll(ctx, c, p.replicationUser(c, false, setUser(c, UserClient, false))...); err != nil {
			return err
		}
		return doAll(ctx, c,
			c.B().ClientKill().User(UserClient).Build(),
			c.B().ClientKill().User(UserReplication).Build(),
		)
	})
}

// CloseWrites stops client writes to the node (the application user off, its connections
// closed) and leaves replication as it is: its replicas go on syncing what it acknowledged.
func (p *Pool) CloseWrites(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		if err := doAll(ctx, c, setUser(c, UserClient, false)); err != nil {
			return err
		}
		return doAll(ctx, c, c.B().ClientKill().User(UserClient).Build())
	})
}

// OpenWrites lets clients write to the node and replicas sync from it.
func (p *Pool) OpenWrites(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		return doAll(ctx, c, p.replicationUser(c, true, setUser(c, UserClient, true))...)
	})
}

// OpenSync lets replicas sync from the node and leaves client writes as they are (fenced,
// after a snapshot was loaded into it: the machine opens them once the restore is complete).
func (p *Pool) OpenSync(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		return doAll(ctx, c, p.replicationUser(c, true)...)
	})
}

// ReplicaOf points the node at a primary. A replica never serves as a sync source (its
// replication user goes off), but it serves reads (its client user goes on: a replica is
// read-only). The replication password is restored in case Detach replaced it.
func (p *Pool) ReplicaOf(ctx context.Context, podIP, runID, primaryIP, replicationPassword string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		port, tlsSetting := p.replicationTo(c, podIP, primaryIP)
		cmds := append(p.replicationUser(c, false),
			c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", replicationPassword).Build())
		cmds = append(cmds, tlsSetting...)
		return doAll(ctx, c, append(cmds,
			c.B().Replicaof().Host(primaryIP).Port(port).Build(),
			setUser(c, UserClient, true),
		)...)
	})
}

// HandOver moves the primary role from one node to a caught-up replica without losing a write.
// FAILOVER TO alone pauses writes and then waits for the target to acknowledge the primary's
// offset, which a replica does once a second: measured 100 ms to 1 s for the role to move,
// which is most of a switchover's write gap. So the hand-over does the waiting itself, on the
// target's own offset: writes are paused (CLIENT PAUSE WRITE, which also stops the replication
// stream, so the primary's offset stands still), the target is polled until it has processed
// everything, and only then FAILOVER TO runs, with FORCE after a short TIMEOUT because nothing
// is left to wait for (measured: the role moves in 30-110 ms, no acknowledged write lost).
// The pause carries its own expiry, so writes resume even if the operator dies half-way; they
// are unpaused at once when the target does not catch up in time. A node that is no longer a
// primary, or already handing over, is left alone: the next survey shows the outcome.
func (p *Pool) HandOver(ctx context.Context, fromIP, fromRunID, toIP, toRunID string, timeoutMillis int64) error {
	if err := p.guard(ctx, toIP, toRunID, func(ctx context.Context, c vk.Client) error {
		return doAll(ctx, c, p.replicationUser(c, true)...)
	}); err != nil {
		return fmt.Errorf("preparing the hand-over target: %w", err)
	}
	catchUp := time.Duration(timeoutMillis) * time.Millisecond
	var offset string
	skip := false
	err := p.guard(ctx, fromIP, fromRunID, func(ctx context.Context, c vk.Client) error {
		info, err := replicationInfo(ctx, c)
		if err != nil {
			return err
		}
		if info["role"] != "master" || info["master_failover_state"] != "no-failover" {
			skip = true
			return nil
		}
		pause := (catchUp + 2*time.Second).Milliseconds()
		if err := c.Do(ctx, c.B().ClientPause().Timeout(pause).Write().Build()).Error(); err != nil {
			return fmt.Errorf("CLIENT PAUSE: %w", err)
		}
		if info, err = replicationInfo(ctx, c); err != nil {
			return err
		}
		offset = info["master_repl_offset"]
		return nil
	})
	if err != nil || skip {
		return err
	}
	unpause := func() {
		_ = p.guard(context.WithoutCancel(ctx), fromIP, fromRunID, func(ctx context.Context, c vk.Client) error {
			return c.Do(ctx, c.B().ClientUnpause().Build()).Error()
		})
	}
	deadline := time.Now().Add(catchUp)
	for {
		var got string
		err := p.guard(ctx, toIP, toRunID, func(ctx context.Context, c vk.Client) error {
			info, err := replicationInfo(ctx, c)
			got = info["master_repl_offset"]
			return err
		})
		if err == nil && got == offset {
			break
		}
		if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			unpause()
			if err == nil {
				err = fmt.Errorf("%s did not reach the primary's offset %s within %s (at %s)", toIP, offset, catchUp, got)
			}
			return fmt.Errorf("hand-over: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
	err = p.guard(ctx, fromIP, fromRunID, func(ctx context.Context, c vk.Client) error {
		// The old primary follows the target from now on, over TLS when both serve it (the
		// target announces the port it replicates on, its TLS port then).
		port, tlsSetting := p.replicationTo(c, fromIP, toIP)
		if len(tlsSetting) > 0 {
			if err := doAll(ctx, c, tlsSetting...); err != nil {
				return err
			}
		}
		return c.Do(ctx, c.B().Arbitrary("FAILOVER", "TO", toIP, strconv.FormatInt(port, 10), "TIMEOUT", "50", "FORCE").Build()).Error()
	})
	// FAILOVER holds its own pause until the roles have moved; ours is no longer needed.
	unpause()
	return err
}

// Alive checks that the node at podIP runs the process runID (ErrOtherProcess otherwise).
func (p *Pool) Alive(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(context.Context, vk.Client) error { return nil })
}

func replicationInfo(ctx context.Context, c vk.Client) (map[string]string, error) {
	text, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return nil, err
	}
	return parseInfo(text), nil
}
