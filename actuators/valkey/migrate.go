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

// Slot migration, the machine's MigrateSlots: the keys and the ownership of a slot range move
// from one shard's primary to another's. Two ways, chosen by the version every node reports:
//
//   - Atomic Slot Migration (Valkey 9.0 and later): CLUSTER MIGRATESLOTS on the source, which
//     moves the range in the background and hands ownership over atomically; the action only
//     starts it (or sees it running, CLUSTER GETSLOTMIGRATIONS) and returns, and the machine
//     decides it again until the target owns the range.
//   - classic (every version): per slot, SETSLOT IMPORTING on the target and MIGRATING on the
//     source, GETKEYSINSLOT and MIGRATE ... KEYS in batches until the slot is empty, then SETSLOT
//     NODE on the target, the source and every other primary, a batch of slots at a time. A call
//     works for at most its budget and returns; each slot's state is in the cluster itself, so an
//     interrupted migration (an operator crash at any step) is finished by the next call, which
//     opens the same slot again (both SETSLOTs are idempotent) and goes on.

// MigrationBatch is how many keys one MIGRATE moves.
const MigrationBatch = 1000

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
// authenticates MIGRATE on the target. fromRunID, when set, is the source process the move was
// decided for: another one is refused. Whatever process the source runs at the start, a batch
// is handed over (SETSLOT NODE) only while it still runs: a source that restarted between
// batches (with its nodes.conf, without its keys) would have handed its slots over empty
// (found by a review).
func (p *Pool) MigrateSlots(ctx context.Context, fromIP, fromRunID, toIP string, r machine.SlotRange, primaries []string, asm bool, operatorPassword string, budget time.Duration) (MigrationResult, error) {
	res := MigrationResult{ASM: asm}
	var srcID, dstID string
	if err := p.run(ctx, Addr(toIP), func(ctx context.Context, c vk.Client) (err error) {
		dstID, err = c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		return err
	}); err != nil {
		return res, fmt.Errorf("CLUSTER MYID of the target %s: %w", toIP, err)
	}
	var owned []int
	var src ClusterView
	var srcRunID string
	err := p.run(ctx, Addr(fromIP), func(ctx context.Context, c vk.Client) error {
		text, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
		if err != nil {
			return err
		}
		srcRunID = parseInfo(text)["run_id"]
		if fromRunID != "" && srcRunID != fromRunID {
			return fmt.Errorf("%w (decided for %s, found %s)", ErrOtherProcess, fromRunID, srcRunID)
		}
		id, err := c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		if err != nil {
			return err
		}
		srcID = id
		if src, err = clusterView(ctx, c); err != nil {
			return err
		}
		me, _ := src.Myself()
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
		return res, stillImporting(ctx, p, toIP, srcID, r)
	}
	if asm {
		for _, ip := range []string{toIP, fromIP} {
			if err := p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
				return c.Do(ctx, c.B().AclSetuser().Username(UserReplication).Rule(strings.Fields(asmReplicationCommands)...).Build()).Error()
			}); err != nil {
				return res, fmt.Errorf("granting the replication user the slot import on %s: %w", ip, err)
			}
		}
		return p.migrateAtomically(ctx, fromIP, dstID, r, res)
	}
	return p.migrateClassic(ctx, fromIP, toIP, srcRunID, srcID, dstID, src, owned, primaries, operatorPassword, budget, res)
}

// migrateAtomically starts CLUSTER MIGRATESLOTS for the part of r the source owns unless a
// job is running there already. What it owns is read again once no job runs: one that ended
// a moment ago has handed its slots over (found on Valkey 9.1: the range read before the job
// ended was refused, "Slots are not served by this node").
func (p *Pool) migrateAtomically(ctx context.Context, fromIP, dstID string, r machine.SlotRange, res MigrationResult) (MigrationResult, error) {
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
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		me, _ := v.Myself()
		var ranges []machine.SlotRange
		for _, o := range me.Slots {
			if lo, hi := max(o.Start, r.Start), min(o.End, r.End); lo <= hi {
				ranges = append(ranges, machine.SlotRange{Start: lo, End: hi})
			}
		}
		res.SlotsLeft = machine.SlotCount(ranges)
		if len(ranges) == 0 {
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

// stillImporting is an error when the target still imports a slot of r from the source, which
// owns none of r any more: nothing this migration does can close it, and finishing it towards
// a third owner or closing it by hand needs a look at where its keys are.
func stillImporting(ctx context.Context, p *Pool, toIP, srcID string, r machine.SlotRange) error {
	v, err := p.ClusterNodes(ctx, toIP)
	if err != nil {
		return fmt.Errorf("reading the target: %w", err)
	}
	me, _ := v.Myself()
	for slot, from := range me.Importing {
		if slot >= r.Start && slot <= r.End && from == srcID {
			return fmt.Errorf("slot %d is importing on the target from the source, which does not own it any more: check where its keys are, then CLUSTER SETSLOT %d STABLE on the target", slot, slot)
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
		m, err := fieldMap(job)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// classicBatch is how many slots a classic migration opens, empties and hands over together:
// each step is one pipeline per node for the whole batch, and Valkey saves (and fsyncs) its
// cluster configuration once per event-loop turn, so a batch of SETSLOTs costs about what one
// does (valkey-cli pays both round trip and fsync for every slot).
const classicBatch = 64

// migratePipeline is how many MIGRATEs are sent in one round trip (see migrateBatch).
const migratePipeline = 1

// migrateClassic moves the slots in batches (classicBatch) until the budget is spent. Every
// step is idempotent and the state of each slot is in the cluster, so a call after an
// interruption anywhere (an operator crash, a timeout) finishes the same slots: a slot the
// target owns already only needs the source told (SETSLOT NODE); one the source migrates to a
// third node (a migration of an abandoned plan) is finished to that node first, never re-aimed,
// because keys already moved there would be stranded.
// src is the source's CLUSTER NODES as MigrateSlots read it.
func (p *Pool) migrateClassic(ctx context.Context, fromIP, toIP, srcRunID, srcID, dstID string, src ClusterView, slots []int, primaries []string, operatorPassword string, budget time.Duration, res MigrationResult) (MigrationResult, error) {
	deadline := time.Now().Add(budget)
	srcMe, _ := src.Myself()
	// owns reads the slots a node serves already (an interrupted hand-over: the target took
	// them, the source was not told yet).
	owns := func(ip string) (map[int]bool, error) {
		v, err := p.ClusterNodes(ctx, ip)
		if err != nil {
			return nil, err
		}
		me, _ := v.Myself()
		out := map[int]bool{}
		for _, r := range me.Slots {
			for s := r.Start; s <= r.End; s++ {
				out[s] = true
			}
		}
		return out, nil
	}
	dstOwns, err := owns(toIP)
	if err != nil {
		return res, fmt.Errorf("reading the target: %w", err)
	}
	// Slots by where they go: the target, or the third node an earlier migration aimed at.
	type leg struct {
		ip, id string
		slots  []int
	}
	legs := map[string]*leg{dstID: {ip: toIP, id: dstID}}
	for _, s := range slots {
		to := dstID
		if other, open := srcMe.Migrating[s]; open && other != dstID && !dstOwns[s] {
			to = other
		}
		if legs[to] == nil {
			ip := ""
			for _, n := range src.Nodes {
				if n.ID == to {
					ip = n.IP
				}
			}
			if ip == "" {
				return res, fmt.Errorf("slot %d is migrating to node %s, which the source does not know: close it by hand (CLUSTER SETSLOT %d STABLE on the source) after checking where its keys are", s, to, s)
			}
			legs[to] = &leg{ip: ip, id: to}
		}
		legs[to].slots = append(legs[to].slots, s)
	}
	for _, l := range legs {
		legOwns := dstOwns
		if l.id != dstID {
			if legOwns, err = owns(l.ip); err != nil {
				return res, fmt.Errorf("reading %s, which slots are migrating to: %w", l.ip, err)
			}
		}
		for i := 0; i < len(l.slots); i += classicBatch {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return res, nil
			}
			batch := l.slots[i:min(i+classicBatch, len(l.slots))]
			keys, err := p.migrateBatch(ctx, fromIP, l.ip, srcRunID, srcID, l.id, batch, legOwns, primaries, operatorPassword)
			res.KeysMoved += keys
			if err != nil {
				return res, err
			}
			if l.id == dstID {
				res.SlotsMoved += len(batch)
				res.SlotsLeft -= len(batch)
			}
		}
	}
	return res, nil
}

// migrateBatch moves slots from the source to the target: opens them on both (IMPORTING on the
// target first, so that a client sent there by ASK is served), empties them (GETKEYSINSLOT and
// MIGRATE, pipelined, until no key is left), then hands them over (SETSLOT NODE on the target,
// which takes ownership with a new epoch, then the source, which stops redirecting with ASK,
// then the other primaries, best effort: gossip tells them too). It returns how many keys moved.
func (p *Pool) migrateBatch(ctx context.Context, fromIP, toIP, srcRunID, srcID, dstID string, slots []int, dstOwns map[int]bool, primaries []string, operatorPassword string) (int, error) {
	setslots := func(ip, state, id string, slots []int) error {
		if len(slots) == 0 {
			return nil
		}
		return p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
			cmds := make(vk.Commands, 0, len(slots))
			for _, s := range slots {
				cmds = append(cmds, c.B().Arbitrary("CLUSTER", "SETSLOT", strconv.Itoa(s), state, id).Build())
			}
			for i, r := range c.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					return fmt.Errorf("SETSLOT %d %s: %w", slots[i], state, err)
				}
			}
			return nil
		})
	}
	var open []int
	for _, s := range slots {
		if !dstOwns[s] {
			open = append(open, s)
		}
	}
	if err := setslots(toIP, "IMPORTING", srcID, open); err != nil {
		return 0, fmt.Errorf("on the target: %w", err)
	}
	if err := setslots(fromIP, "MIGRATING", dstID, open); err != nil {
		return 0, fmt.Errorf("on the source: %w", err)
	}
	moved := 0
	err := p.run(ctx, Addr(fromIP), func(ctx context.Context, c vk.Client) error {
		pending := open
		for len(pending) > 0 {
			cmds := make(vk.Commands, 0, len(pending))
			for _, s := range pending {
				cmds = append(cmds, c.B().ClusterGetkeysinslot().Slot(int64(s)).Count(MigrationBatch).Build())
			}
			var migrate vk.Commands
			var next []int
			for i, r := range c.DoMulti(ctx, cmds...) {
				ks, err := r.AsStrSlice()
				if err != nil {
					return fmt.Errorf("GETKEYSINSLOT %d: %w", pending[i], err)
				}
				if len(ks) == 0 {
					continue
				}
				args := append([]string{toIP, strconv.FormatInt(p.clientPort(toIP), 10), "", "0", "10000", "AUTH2", UserOperator, operatorPassword, "KEYS"}, ks...)
				migrate = append(migrate, c.B().Arbitrary("MIGRATE").Args(args...).Build())
				moved += len(ks)
				next = append(next, pending[i])
			}
			// MIGRATEs are not pipelined: each blocks the source while the target restores its
			// keys, and a node runs a client's whole pipeline before serving anyone else, so a
			// deep one stalls the applications' commands behind it (measured, 2,000,000 keys,
			// 3 → 4 shards: client p99 53 ms with 64 MIGRATEs in flight, 30 ms with 4, 14 ms
			// with 1, at about the same keys/s).
			for i := 0; i < len(migrate); i += migratePipeline {
				for _, r := range c.DoMulti(ctx, migrate[i:min(i+migratePipeline, len(migrate))]...) {
					if err := r.Error(); err != nil && !vk.IsValkeyNil(err) {
						return fmt.Errorf("MIGRATE: %w", err)
					}
				}
			}
			pending = next
		}
		return nil
	})
	if err != nil {
		return moved, err
	}
	if err := p.Alive(ctx, fromIP, srcRunID); err != nil {
		return moved, fmt.Errorf("the source before the hand-over: %w", err)
	}
	if err := setslots(toIP, "NODE", dstID, open); err != nil {
		return moved, fmt.Errorf("on the target: %w", err)
	}
	if err := setslots(fromIP, "NODE", dstID, slots); err != nil {
		return moved, fmt.Errorf("on the source: %w", err)
	}
	for _, ip := range primaries {
		if ip != fromIP && ip != toIP {
			_ = setslots(ip, "NODE", dstID, slots)
		}
	}
	return moved, p.keepHandedOver(ctx, fromIP, toIP, slots)
}

// keepHandedOver checks that the target still serves the slots just handed over, and takes back
// those its view gives to the source again, which disclaims them now: the source's claim, sent
// before it was told and carrying an epoch bumped by a collision, overruled the target's
// (disclaimed.go). Left alone the slots would be served by nobody. Valkey deleted the keys the
// target held in them when it was overruled, so the hand-over fails, saying so, even though the
// slots are served again: whatever keys it held there (moved by this call or an earlier one,
// or written through ASK while the slots were open) are gone. The machine moves no slot while
// the source's claim could be the newer (machine/sharedepoch.go); this is the trace of a case
// it could not see.
func (p *Pool) keepHandedOver(ctx context.Context, fromIP, toIP string, slots []int) error {
	var taken []int
	err := p.runFor(ctx, Addr(toIP), p.bulkTimeout(len(slots)), func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		var lost []int
		for _, s := range slots {
			if o, _ := v.OwnerOf(s); !o.Myself && o.IP == fromIP {
				lost = append(lost, s)
			}
		}
		if len(lost) == 0 {
			return nil
		}
		if err := p.disclaims(ctx, fromIP, lost); err != nil {
			return fmt.Errorf("the target's view gives slots %v back to the source (Valkey deleted any keys the target held in them): %w", rangesOf(lost), err)
		}
		me, _ := v.Myself()
		if err := takeBack(ctx, c, me.ID, lost); err != nil {
			return err
		}
		taken = lost
		return nil
	})
	if err != nil || len(taken) == 0 {
		return err
	}
	return fmt.Errorf("the source's claim on slots %v overruled the target's after the hand-over (a config-epoch collision); the target serves them again, but Valkey deleted any keys it held in them (\"Deleting keys in dirty slot\" in its log)", rangesOf(taken))
}
