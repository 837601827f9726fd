package valkey

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The Sentinel topology's planned hand-over (machine.HoldBack, machine.SentinelHandOver): the
// replicas that must not be picked are held back at replica-priority 0, then one sentinel that
// has read their priorities is sent SENTINEL FAILOVER once the primary's client writes are
// closed and the target holds everything the primary does. No CLIENT PAUSE: the sentinels'
// own traffic to the primary (hellos are PUBLISH) must go on, and closing the application
// user is what keeps clients out.

// HoldBack sets the replica at podIP, if it runs runID, to replica-priority 0 and leaves its
// users as they are: no sentinel picks it once it has read its INFO. OpenWrites gives the
// priority back.
func (p *Pool) HoldBack(ctx context.Context, podIP, runID string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		info, err := replicationInfo(ctx, c)
		if err != nil {
			return err
		}
		if info["role"] != "slave" {
			return fmt.Errorf("%s is not a replica (role %s)", podIP, info["role"])
		}
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("replica-priority", "0").Build()).Error()
	})
}

// SentinelHandOver hands the primary role from the node at fromIP (process fromRunID) to its
// replica at toIP (toRunID) through the sentinel at sentinelIP, if it answers with
// sentinelID: the primary's client writes are closed (CloseWrites), the target is waited for,
// at most catchUp, until it holds the primary's replication offset, then the sentinel is sent
// SENTINEL FAILOVER. On any failure before the sentinel took the failover, the primary's
// writes are opened again.
func (p *Pool) SentinelHandOver(ctx context.Context, sentinelIP, sentinelID, fromIP, fromRunID, toIP, toRunID string, catchUp time.Duration) error {
	return p.onSentinel(ctx, sentinelIP, sentinelID, func(ctx context.Context, sc vk.Client) error {
		if err := p.CloseWrites(ctx, fromIP, fromRunID); err != nil {
			return fmt.Errorf("closing writes on %s: %w", fromIP, err)
		}
		reopen := func(cause error) error {
			if err := p.OpenWrites(context.WithoutCancel(ctx), fromIP, fromRunID); err != nil {
				return fmt.Errorf("%w; opening writes on %s again: %v", cause, fromIP, err)
			}
			return cause
		}
		var offset int64
		err := p.guard(ctx, fromIP, fromRunID, func(ctx context.Context, c vk.Client) error {
			info, err := replicationInfo(ctx, c)
			if err != nil {
				return err
			}
			if info["role"] != "master" {
				return fmt.Errorf("%s is not a primary (role %s)", fromIP, info["role"])
			}
			offset = infoInt(info, "master_repl_offset")
			return nil
		})
		if err != nil {
			return reopen(err)
		}
		deadline := time.Now().Add(catchUp)
		for {
			var got int64
			var host string
			err := p.guard(ctx, toIP, toRunID, func(ctx context.Context, c vk.Client) error {
				info, err := replicationInfo(ctx, c)
				got, host = infoInt(info, "master_repl_offset"), info["master_host"]
				return err
			})
			if err == nil && host == fromIP && got >= offset {
				break
			}
			if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
				if err == nil {
					err = fmt.Errorf("%s did not reach the primary's offset %d within %s (at %d, following %q)", toIP, offset, catchUp, got, host)
				}
				return reopen(err)
			}
			time.Sleep(time.Millisecond)
		}
		if err := sc.Do(ctx, sc.B().Arbitrary("SENTINEL", "FAILOVER", SentinelGroup).Build()).Error(); err != nil {
			return reopen(fmt.Errorf("SENTINEL FAILOVER: %w", err))
		}
		return nil
	})
}

// sentinelReplicas is SENTINEL REPLICAS of the group: each replica's address, and the
// replica-priority and role the sentinel last read from its INFO, sorted by address.
func sentinelReplicas(ctx context.Context, c vk.Client) ([]machine.SentinelReplica, error) {
	r := c.Do(ctx, c.B().Arbitrary("SENTINEL", "REPLICAS", SentinelGroup).Build())
	list, err := r.ToArray()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	var out []machine.SentinelReplica
	for _, e := range list {
		m, err := fieldMap(e)
		if err != nil {
			return nil, fmt.Errorf("SENTINEL REPLICAS: %w", err)
		}
		prio, err := strconv.Atoi(m["slave-priority"])
		if err != nil || strings.TrimSpace(m["ip"]) == "" {
			return nil, fmt.Errorf("SENTINEL REPLICAS: entry %v", m)
		}
		out = append(out, machine.SentinelReplica{IP: m["ip"], Priority: prio, ReportsPrimary: m["role-reported"] == "master"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out, nil
}
