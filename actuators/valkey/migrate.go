package valkey

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Slot migration, the machine's MigrateSlots: the keys and the ownership of a slot range move
// from one shard's primary to another's. Two ways, chosen by the version every node reports:
//
//   - Atomic Slot Migration (Valkey 9.0 and later): CLUSTER MIGRATESLOTS on the source, which
//     moves the range in the background and hands ownership over atomically; the action only
//     starts it (or sees it running, CLUSTER GETSLOTMIGRATIONS) and returns, and the machine
//     decides it again until the target owns the range.
//   - classic (every version): per slot, SETSLOT IMPORTING on the target and MIGRATING on the
//     source, GETKEYSINSLOT and MIGRATE ... KEYS in batches until the slot is empty, then SETSLOT
//     NODE on the target, the source and every other primary. Several slots move at once. A call
//     works for at most its budget and returns; each slot's state is in the cluster itself, so an
//     interrupted migration (an operator crash at any step) is finished by the next call, which
//     opens the same slot again (both SETSLOTs are idempotent) and goes on.

// MigrationBatch is how many keys one MIGRATE moves.
const MigrationBatch = 1000

// classicWorkers is how many slots a classic migration moves at once.
const classicWorkers = 8

// MigrationResult is what one call did, for logs, status and metrics.
type MigrationResult struct {
	// ASM is true when Atomic Slot Migration was used.
	ASM bool
	// Running is true while an ASM job for the range is still running on the source.
	Running bool
	// SlotsMoved and KeysMoved count what this call completed (classic).
	SlotsMoved, KeysMoved int
	// SlotsLeft is how many slots of the range the source still owned when the call ended.
	SlotsLeft int
}

// asmCommands are the CLUSTER subcommands of Atomic Slot Migration. They exist only on Valkey
// 9.0 and later, so they cannot be in the operator's rules in auth.conf (an 8.0 node would refuse
// to start on an unknown subcommand): the operator grants them to itself on a 9.x source first.
const asmCommands = "+cluster|migrateslots +cluster|getslotmigrations +cluster|cancelslotmigrations"

// asmReplicationCommands is what Atomic Slot Migration needs of the replication user: the source
// authenticates as it on the target, drives the import with CLUSTER SYNCSLOTS (a 9.x subcommand)
// and replays the slots' data and every write made to them meanwhile, which the target runs as
// that user (found on Valkey 9.1.2: "NOPERM User replication has no permissions to run the
// 'cluster|syncslots' command", then "... the 'select' command"); the replication commands
// themselves are administrative and stay granted (replicas kept syncing through a migration only
// then). So while a migration runs the
// replication user may write what an application may; the rules go back to replication only
// (RestoreReplicationRules) once no migration runs on the node: when the source is asked again
// for a range it no longer holds, and on every node outside Resharding (the operator checks the
// survey's ReplicationWidened each turn, so an operator restart does not leave them widened).
const asmReplicationCommands = "~* &* +@all -@admin +cluster|syncslots " + replicationRules

// MigrateSlots moves the part of r that the source at fromIP owns to the target at toIP.
// primaries are the IPs of every primary (SETSLOT NODE is sent to each). operatorPassword
// authenticates MIGRATE on the target.
func (p *Pool) MigrateSlots(ctx context.Context, fromIP, toIP string, r machine.SlotRange, primaries []string, asm bool, operatorPassword string, budget time.Duration) (MigrationResult, error) {
	res := MigrationResult{ASM: asm}
	var srcID, dstID string
	if err := p.run(ctx, Addr(toIP), func(ctx context.Context, c vk.Client) (err error) {
		dstID, err = c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		return err
	}); err != nil {
		return res, fmt.Errorf("CLUSTER MYID of the target %s: %w", toIP, err)
	}
	var owned []int
	err := p.run(ctx, Addr(fromIP), func(ctx context.Context, c vk.Client) error {
		id, err := c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		if err != nil {
			return err
		}
		srcID = id
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		me, _ := v.Myself()
		for _, o := range me.Slots {
			for s := max(o.Start, r.Start); s <= min(o.End, r.End); s++ {
				owned = append(owned, s)
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("reading the source %s: %w", fromIP, err)
	}
	res.SlotsLeft = len(owned)
	if len(owned) == 0 {
		if asm {
			return res, p.RestoreReplicationRules(ctx, toIP, fromIP)
		}
		return res, nil
	}
	if asm {
		for _, ip := range []string{toIP, fromIP} {
			if err := p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
				return c.Do(ctx, c.B().AclSetuser().Username(UserReplication).Rule(strings.Fields(asmReplicationCommands)...).Build()).Error()
			}); err != nil {
				return res, fmt.Errorf("granting the replication user the slot import on %s: %w", ip, err)
			}
		}
		return p.migrateAtomically(ctx, fromIP, dstID, rangesOf(owned), res)
	}
	return p.migrateClassic(ctx, fromIP, toIP, srcID, dstID, owned, primaries, operatorPassword, budget, res)
}

// migrateAtomically starts CLUSTER MIGRATESLOTS for ranges on the source unless a job is
// running there already.
func (p *Pool) migrateAtomically(ctx context.Context, fromIP, dstID string, ranges []machine.SlotRange, res MigrationResult) (MigrationResult, error) {
	err := p.run(ctx, Addr(fromIP), func(ctx context.Context, c vk.Client) error {
		if err := c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(strings.Fields(asmCommands)...).Build()).Error(); err != nil {
			return fmt.Errorf("granting the operator the slot migration commands: %w", err)
		}
		jobs, err := slotMigrations(ctx, c)
		if err != nil {
			return err
		}
		var failed string
		for _, j := range jobs {
			switch {
			case !migrationEnded(j):
				res.Running = true
			case j["state"] != "success" && j["operation"] == "EXPORT":
				failed = fmt.Sprintf("the last migration of %s ended %s: %s", j["slot_ranges"], j["state"], j["message"])
			}
		}
		if res.Running {
			return nil
		}
		args := []string{"CLUSTER", "MIGRATESLOTS", "SLOTSRANGE"}
		for _, r := range ranges {
			args = append(args, strconv.Itoa(r.Start), strconv.Itoa(r.End))
		}
		args = append(args, "NODE", dstID)
		if err := c.Do(ctx, c.B().Arbitrary(args[0]).Args(args[1:]...).Build()).Error(); err != nil {
			return fmt.Errorf("CLUSTER MIGRATESLOTS: %w", err)
		}
		res.Running = true
		if failed != "" {
			return fmt.Errorf("%s; started again", failed)
		}
		return nil
	})
	return res, err
}

// RestoreReplicationRules puts the replication user's rules back to replication only on the
// nodes of a finished Atomic Slot Migration, unless another migration still runs there.
func (p *Pool) RestoreReplicationRules(ctx context.Context, ips ...string) error {
	for _, ip := range ips {
		err := p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
			// Only 9.x nodes get widened: the migration subcommands exist there.
			if err := c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(strings.Fields(asmCommands)...).Build()).Error(); err != nil {
				return err
			}
			jobs, err := slotMigrations(ctx, c)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if !migrationEnded(j) {
					return nil
				}
			}
			rules := append([]string{"resetkeys", "resetchannels", "-@all"}, strings.Fields(replicationRules)...)
			return c.Do(ctx, c.B().AclSetuser().Username(UserReplication).Rule(rules...).Build()).Error()
		})
		if err != nil {
			return fmt.Errorf("restoring the replication user's rules on %s: %w", ip, err)
		}
	}
	return nil
}

// migrationEnded reports whether a CLUSTER GETSLOTMIGRATIONS job is over, done or not.
func migrationEnded(job map[string]string) bool {
	switch job["state"] {
	case "success", "failed", "cancelled", "canceled":
		return true
	}
	return false
}

// slotMigrations reads CLUSTER GETSLOTMIGRATIONS: one map of fields per job.
func slotMigrations(ctx context.Context, c vk.Client) ([]map[string]string, error) {
	arr, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETSLOTMIGRATIONS").Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS: %w", err)
	}
	var out []map[string]string
	for _, job := range arr {
		m, err := job.AsStrMap()
		if err != nil {
			// RESP2 gives a flat list of field, value.
			fields, ferr := job.AsStrSlice()
			if ferr != nil {
				return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS: %w", err)
			}
			m = map[string]string{}
			for i := 0; i+1 < len(fields); i += 2 {
				m[fields[i]] = fields[i+1]
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// migrateClassic moves slots one by one, classicWorkers at a time, until the budget is spent.
func (p *Pool) migrateClassic(ctx context.Context, fromIP, toIP, srcID, dstID string, slots []int, primaries []string, operatorPassword string, budget time.Duration, res MigrationResult) (MigrationResult, error) {
	deadline := time.Now().Add(budget)
	work := make(chan int)
	var moved, keys atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < classicWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for slot := range work {
				n, err := p.migrateSlot(ctx, fromIP, toIP, srcID, dstID, slot, primaries, operatorPassword)
				keys.Add(int64(n))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("slot %d: %w", slot, err)
					}
					mu.Unlock()
					continue
				}
				moved.Add(1)
			}
		}()
	}
feed:
	for _, s := range slots {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case work <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	res.SlotsMoved, res.KeysMoved = int(moved.Load()), int(keys.Load())
	res.SlotsLeft -= res.SlotsMoved
	return res, firstErr
}

// migrateSlot moves one slot's keys and then its ownership; it returns how many keys it moved.
func (p *Pool) migrateSlot(ctx context.Context, fromIP, toIP, srcID, dstID string, slot int, primaries []string, operatorPassword string) (int, error) {
	setslot := func(ip, state, id string) error {
		return p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
			return c.Do(ctx, c.B().Arbitrary("CLUSTER", "SETSLOT", strconv.Itoa(slot), state, id).Build()).Error()
		})
	}
	if err := setslot(toIP, "IMPORTING", srcID); err != nil {
		return 0, fmt.Errorf("SETSLOT IMPORTING on the target: %w", err)
	}
	if err := setslot(fromIP, "MIGRATING", dstID); err != nil {
		return 0, fmt.Errorf("SETSLOT MIGRATING on the source: %w", err)
	}
	moved := 0
	err := p.run(ctx, Addr(fromIP), func(ctx context.Context, c vk.Client) error {
		for {
			ks, err := c.Do(ctx, c.B().ClusterGetkeysinslot().Slot(int64(slot)).Count(MigrationBatch).Build()).AsStrSlice()
			if err != nil {
				return fmt.Errorf("GETKEYSINSLOT: %w", err)
			}
			if len(ks) == 0 {
				return nil
			}
			args := []string{toIP, strconv.Itoa(Port), "", "0", "10000", "AUTH2", UserOperator, operatorPassword, "KEYS"}
			if err := c.Do(ctx, c.B().Arbitrary("MIGRATE").Args(append(args, ks...)...).Build()).Error(); err != nil && !vk.IsValkeyNil(err) {
				return fmt.Errorf("MIGRATE %d keys: %w", len(ks), err)
			}
			moved += len(ks)
		}
	})
	if err != nil {
		return moved, err
	}
	// The target first (it then owns the slot with a new epoch), the source next (it stops
	// redirecting with ASK), then every other primary so that nobody sends clients to the source.
	if err := setslot(toIP, "NODE", dstID); err != nil {
		return moved, fmt.Errorf("SETSLOT NODE on the target: %w", err)
	}
	if err := setslot(fromIP, "NODE", dstID); err != nil {
		return moved, fmt.Errorf("SETSLOT NODE on the source: %w", err)
	}
	// Best effort: a primary that does not answer learns the new owner by gossip (the target's
	// epoch is higher).
	for _, ip := range primaries {
		if ip != fromIP && ip != toIP {
			_ = setslot(ip, "NODE", dstID)
		}
	}
	return moved, nil
}
