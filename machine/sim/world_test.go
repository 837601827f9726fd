package sim

import (
	"context"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Tests of the simulated world itself: the properties are only as honest as the model.

// bareWorld is a replication world with three running, fenced, empty nodes and no operator.
func bareWorld(t *testing.T) (*World, *node, *node, *node) {
	t.Helper()
	w := NewWorld(Topologies["replication"])
	w.objects = machine.Objects{Shards: 1, Replicas: 2, Revision: "r1"}
	w.kube()
	w.tick = startTicks
	return w, w.nodes[0], w.nodes[1], w.nodes[2]
}

// wire makes p the open primary and the others its linked replicas.
func wire(w *World, p *node, replicas ...*node) {
	w.promote(p)
	p.writesFenced, p.syncFenced = false, false
	for _, r := range replicas {
		r.masterIP, r.linkUp = p.ip, false
	}
	w.pump()
}

func TestPartialResyncOnlyWithinAHistory(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	w.write(Write{Key: 1})
	w.tick++
	w.pump()
	if len(r1.log) != 1 || r1.replID != p.replID {
		t.Fatalf("replica did not follow: %+v", r1)
	}
	// r1 is promoted (new ID, old one kept as ReplID2) and writes; r2 continues from it.
	w.promote(r1)
	r1.writesFenced, r1.syncFenced = false, false
	r2.masterIP, r2.linkUp = r1.ip, false
	genBefore := r2.gen
	w.pump()
	if !r2.linkUp || r2.gen != genBefore+1 || r2.replID != r1.replID {
		t.Fatalf("r2 should continue from r1 (partial resync, adopting its ID): %+v", r2)
	}
	if len(w.violations) > 0 {
		t.Fatal(w.violations)
	}
}

func TestMinReplicasFencesAnIsolatedPrimary(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	if !w.acceptsWrites(p) {
		t.Fatal("a primary with its replicas accepts writes")
	}
	// Partition the primary away: it keeps counting its replicas until maxLag passed.
	p.side = 1
	for i := 0; i < maxLag; i++ {
		w.tick++
		w.pump()
	}
	if !w.acceptsWrites(p) {
		t.Fatal("within maxLag the isolated primary still accepts writes (what FenceTimeout is for)")
	}
	w.tick++
	w.pump()
	if w.acceptsWrites(p) {
		t.Fatal("after maxLag the isolated primary must refuse writes")
	}
	// A replica it can see leaving (detached) stops counting at once.
	p.side = 0
	w.pump()
	if !w.acceptsWrites(p) {
		t.Fatal("healed: accepts again")
	}
	r1.masterIP, r2.masterIP = "", ""
	if w.acceptsWrites(p) {
		t.Fatal("with both replicas visibly detached it must refuse at once")
	}
}

func TestWaitCountsOnlyReplicasThatHoldTheWrite(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	r1.lagTicks, r2.lagTicks = 5, 5
	w.write(Write{Key: 1, Wait: true})
	if w.writes[0].waitAcked {
		t.Fatal("lagging replicas cannot acknowledge WAIT")
	}
	r1.lagTicks = 0
	w.write(Write{Key: 2, Wait: true})
	if !w.writes[1].waitAcked || !r1.has.get(1) {
		t.Fatal("a linked replica acknowledges WAIT 1")
	}
}

func TestEmptyRestartedSourceIsCaught(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	w.setHolder(0, p)
	w.write(Write{Key: 1, Wait: true})
	w.tick++
	w.pump()
	// The primary restarts empty but comes up unfenced and still the replicas' master IP:
	// they full-sync its empty data set (what the start-up fence prevents).
	w.restart(p, false)
	p.writesFenced, p.syncFenced, p.role = false, false, machine.RolePrimary
	w.tick += startTicks
	r1.linkUp = false
	w.pump()
	if len(w.violations) == 0 || w.violations[0].Kind != ViolationEmptySource {
		t.Fatalf("want an empty-sync-source violation, got %v", w.violations)
	}
}

func TestTwoWritablePrimariesAreCaught(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	w.checkWorld()
	if len(w.violations) > 0 {
		t.Fatal(w.violations)
	}
	// r1 promoted and opened while p still has r2: both accept writes.
	w.promote(r1)
	r1.writesFenced, r1.syncFenced = false, false
	r2.masterIP = r1.ip
	w.topo.MinSyncReplicas = 0
	w.checkWorld()
	if len(w.violations) == 0 || w.violations[0].Kind != ViolationTwoPrimaries {
		t.Fatalf("want two-primaries, got %v", w.violations)
	}
}

func TestLostWaitWriteIsCaughtAndFaultsExempt(t *testing.T) {
	w, p, r1, r2 := bareWorld(t)
	wire(w, p, r1, r2)
	w.write(Write{Key: 1, Wait: true}) // on p and both replicas
	w.tick++
	w.pump()
	// Faults wipe copies until one node holds it: the WAIT promise is void, losing it is
	// exempt. Two copies left are not enough to exempt it.
	w.restart(r1, false)
	if w.writes[0].exempt {
		t.Fatal("two copies left: not exempt")
	}
	w.restart(r2, false)
	if !w.writes[0].exempt {
		t.Fatal("a write faults left on a single node must be exempt")
	}
	// A new write on the replicas, then a primary without it opens: lost.
	w2, p2, s1, s2 := bareWorld(t)
	wire(w2, p2, s1, s2)
	w2.write(Write{Key: 1, Wait: true})
	w2.tick++
	w2.pump()
	w2.promote(s1)
	s1.writesFenced, s1.syncFenced = false, false
	s1.log, s1.has = nil, nil // as if it had been promoted without the write
	s2.masterIP = s1.ip
	p2.writesFenced = true
	w2.tick++
	w2.pump()
	w2.checkWorld()
	found := false
	for _, v := range w2.violations {
		found = found || v.Kind == ViolationLostWrite
	}
	if !found {
		t.Fatalf("want lost-wait-write, got %v", w2.violations)
	}
}

func TestActionsAreRefusedForAnotherProcess(t *testing.T) {
	w, p, r1, _ := bareWorld(t)
	wire(w, p, r1)
	run := r1.runID
	w.restart(r1, true)
	w.tick += startTicks
	if err := w.Apply(context.Background(), machine.Promote{Target: machine.Target{Node: r1.name, RunID: run}}); err == nil {
		t.Fatal("a promotion decided for the previous process must be refused")
	}
	if err := w.Apply(context.Background(), machine.Promote{Target: machine.Target{Node: r1.name, RunID: r1.runID}}); err != nil {
		t.Fatalf("the same promotion for the current process: %v", err)
	}
}
