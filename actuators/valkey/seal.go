package valkey

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A seal is kept where it acts: the node's masterauth, which no primary accepts while it
// holds a seal, so the node can start no new link. The survey reads it back (the seal's time
// and what ROLE said survive an operator restart, and go with the process: a restarted node
// reads its real masterauth from its configuration file).
//
//	valkey-operator-seal;<unix ms>;<1: no connection to any primary at the seal, else 0>;<clock>
const sealPrefix = "valkey-operator-seal;"

// Seal replaces the node's replication password with a seal, in one transaction with ROLE:
// "connect" or "connecting" (or a primary) means no handshake of it had got past the password
// when the seal took effect (see unlinked). Then the seal is written again with a time read after
// the transaction, which bounds the moment of the seal from above: no primary can have counted
// this node after it (machine.Seal).
func (p *Pool) Seal(ctx context.Context, podIP, runID, clock string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		// Nodes configured by an operator before seals lack the transaction's rules.
		if err := c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule("+multi", "+exec").Build()).Error(); err != nil {
			return fmt.Errorf("seal: granting MULTI/EXEC: %w", err)
		}
		return c.Dedicated(func(dc vk.DedicatedClient) error {
			before := time.Now()
			resps := dc.DoMulti(ctx,
				dc.B().Multi().Build(),
				dc.B().Role().Build(),
				dc.B().ConfigSet().ParameterValue().ParameterValue("masterauth", sealValue(before, false, clock)).Build(),
				dc.B().Exec().Build(),
			)
			for _, r := range resps[:3] {
				if err := r.Error(); err != nil {
					return fmt.Errorf("seal: %w", err)
				}
			}
			results, err := resps[3].ToArray()
			if err != nil || len(results) != 2 {
				return fmt.Errorf("seal: EXEC: %v (%d results)", err, len(results))
			}
			role, err := results[0].ToArray()
			if err != nil || len(role) == 0 {
				return fmt.Errorf("seal: ROLE: %v", err)
			}
			if err := results[1].Error(); err != nil {
				return fmt.Errorf("seal: CONFIG SET masterauth: %w", err)
			}
			if !unlinked(role) {
				return nil
			}
			after := time.Now()
			return dc.Do(ctx, dc.B().ConfigSet().ParameterValue().ParameterValue("masterauth", sealValue(after, true, clock)).Build()).Error()
		})
	})
}

// unlinked reads a ROLE reply: a primary, or a replica whose state is "connect" (it must
// connect) or "connecting" (its TCP connect is in progress): no handshake has got as far as
// AUTH, which reads masterauth when it is sent (valkey's replication.c), so none can be
// counted by a primary after the seal. "handshake", "sync" and "connected" are not.
func unlinked(role []vk.ValkeyMessage) bool {
	kind, _ := role[0].ToString()
	if kind == "master" {
		return true
	}
	if len(role) < 4 {
		return false
	}
	state, _ := role[3].ToString()
	return state == "connect" || state == "connecting"
}

// Unseal gives the node its replication password back.
func (p *Pool) Unseal(ctx context.Context, podIP, runID, replicationPassword string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", replicationPassword).Build()).Error()
	})
}

func sealValue(at time.Time, unlinked bool, clock string) string {
	u := "0"
	if unlinked {
		u = "1"
	}
	return sealPrefix + strconv.FormatInt(at.UnixMilli(), 10) + ";" + u + ";" + clock
}

// parseSeal reads a masterauth: the seal it holds, or none.
func parseSeal(masterauth string) machine.SealRecord {
	rest, ok := strings.CutPrefix(masterauth, sealPrefix)
	if !ok {
		return machine.SealRecord{}
	}
	f := strings.SplitN(rest, ";", 3)
	if len(f) != 3 {
		return machine.SealRecord{}
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return machine.SealRecord{}
	}
	return machine.SealRecord{At: time.UnixMilli(ms).UTC(), Unlinked: f[1] == "1", Clock: f[2]}
}
