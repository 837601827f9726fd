package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// The actuators of cluster mode: the cluster bus (who knows whom) and the slot map (who
// serves what).

func addNode(ctx context.Context, x actuation, a machine.AddNode) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	// The node meets every pod of the cluster it does not know: one action joins it to all
	// of them, whichever joined first.
	return x.w.pool.Meet(ctx, addr, a.RunID, peerIPs(x.w, a.Node, false)...)
}

func removeNode(ctx context.Context, x actuation, a machine.RemoveNode) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.RemoveFromCluster(ctx, addr, peerIPs(x.w, a.Node, true))
}

func forgetNode(ctx context.Context, x actuation, a machine.ForgetNode) error {
	return x.w.pool.ForgetEverywhere(ctx, a.ID, peerIPs(x.w, "", true))
}

func migrateSlots(ctx context.Context, x actuation, a machine.MigrateSlots) error {
	w := x.w
	from, err := x.ip(a.FromNode)
	if err != nil {
		return err
	}
	to, err := x.ip(a.ToNode)
	if err != nil {
		return err
	}
	// The move is for the processes the decision saw: a source restarted since may hold less
	// than the one decided on (MigrateSlots checks the source, before the move and before
	// each hand-over).
	if err := w.pool.Alive(ctx, to, a.ToRunID); err != nil {
		return fmt.Errorf("target %s: %w", a.ToNode, err)
	}
	var primaries []string
	for _, n := range w.obs.Nodes {
		if n.Reachable && n.Valkey.Role == machine.RolePrimary {
			primaries = append(primaries, n.Pod.IP)
		}
	}
	start := time.Now()
	res, err := w.pool.MigrateSlots(ctx, from, a.FromRunID, to, a.Slots, primaries, atomicSlotMigration(w.obs.Nodes), w.passwords.Operator, migrationBudget)
	w.addMigration(res, time.Since(start))
	logFrom(ctx).Info("slot migration step", "action", a.String(), "asm", res.ASM, "running", res.Running,
		"slotsMoved", res.SlotsMoved, "keysMoved", res.KeysMoved, "slotsLeft", res.SlotsLeft, "took", time.Since(start).Round(time.Millisecond))
	return err
}

func takeSlotsOver(ctx context.Context, x actuation, a machine.TakeSlotsOver) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	from, err := x.ip(a.From)
	if err != nil {
		return err
	}
	return x.w.pool.TakeSlotsOver(ctx, addr, a.RunID, from, a.FromRunID, a.Slots)
}

func assignSlots(ctx context.Context, x actuation, a machine.AssignSlots) error {
	addr, err := x.ip(a.Node)
	if err != nil {
		return err
	}
	return x.w.pool.AssignSlots(ctx, addr, a.RunID, a.Slots)
}

// peerIPs are the IPs of the cluster's pods other than node (only those whose Valkey answered,
// with answering).
func peerIPs(w *world, node string, answering bool) []string {
	var out []string
	for _, n := range w.obs.Nodes {
		if n.Name != node && n.Pod.IP != "" && (n.Reachable || !answering) {
			out = append(out, n.Pod.IP)
		}
	}
	return out
}

// migrationBudget bounds one classic MigrateSlots call: the reconcile that carries it out
// surveys nothing meanwhile, so a large range moves over several turns (each resumes where the
// cluster shows the last one stopped).
const migrationBudget = 15 * time.Second

// migrationStep is what the slot migrations of a turn did together, for status.progress.
type migrationStep struct {
	result valkey.MigrationResult
	// took is the longest call: they run side by side.
	took time.Duration
}

// addMigration adds one migration call's result to the turn's step; calls run concurrently.
func (w *world) addMigration(res valkey.MigrationResult, took time.Duration) {
	w.migrationMu.Lock()
	defer w.migrationMu.Unlock()
	if w.migration == nil {
		w.migration = &migrationStep{result: valkey.MigrationResult{ASM: res.ASM}}
	}
	m := w.migration
	m.result.Running = m.result.Running || res.Running
	m.result.SlotsMoved += res.SlotsMoved
	m.result.KeysMoved += res.KeysMoved
	m.result.SlotsLeft += res.SlotsLeft
	m.took = max(m.took, took)
}

// atomicSlotMigration says whether slots move with Atomic Slot Migration: only when every node
// that answers reports Valkey 9.0 or later in INFO server (the image tag is not trusted: a
// rolling upgrade runs mixed versions, and the tag may name anything).
func atomicSlotMigration(nodes []machine.Node) bool {
	seen := false
	for _, n := range nodes {
		if !n.Reachable {
			continue
		}
		major, _, _ := strings.Cut(n.Valkey.Version, ".")
		if v, err := strconv.Atoi(major); err != nil || v < 9 {
			return false
		}
		seen = true
	}
	return seen
}
