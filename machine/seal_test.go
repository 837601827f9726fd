package machine

import (
	"testing"
	"time"
)

// sealed marks a replica sealed at sec on clock "" (the fixtures' clock), unlinked or not.
func sealed(n Node, sec int, unlinked bool) Node {
	n.Valkey.Sealed = SealRecord{At: at(sec), Unlinked: unlinked}
	return n
}

// A primary that stops answering: the replicas whose link is down are sealed from the first
// failed probe on (a linked one is not: its link still carries acknowledgements, a seal would
// change nothing), and a replica sealed unlinked is not sealed again.
func TestReplicasThatLostThePrimaryAreSealedBeforeItIsDeclaredLost(t *testing.T) {
	spec := testSpec(3)
	d := Decide(steadyState(), obsAt(1, spec, unreachable(primary(9), 1), detachedFrom(replica(1, 9)), replica(2, 9), sealed(detachedFrom(replica(3, 9)), 0, true)))
	if d.Transition != nil {
		t.Fatalf("one failed probe of three is no failover: %s", d)
	}
	if got := actionsOf(d, "seal"); len(got) != 1 || got[0] != "seal s0-1" {
		t.Fatalf("seal %v, want only s0-1 (s0-2 still linked, s0-3 sealed unlinked already)", got)
	}
	// Sealed while it still had a connection: sealed again now that it has none.
	d = Decide(steadyState(), obsAt(2, spec, unreachable(primary(9), 2), sealed(detachedFrom(replica(1, 9)), 1, false), replica(2, 9), sealed(detachedFrom(replica(3, 9)), 0, true)))
	if got := actionsOf(d, "seal"); len(got) != 1 || got[0] != "seal s0-1" {
		t.Fatalf("seal %v, want s0-1 sealed again (its seal was taken while it had a connection)", got)
	}
	// The primary answers again: every seal is undone.
	d = Decide(steadyState(), obsAt(3, spec, primary(9), sealed(replica(1, 9), 1, true), replica(2, 9), sealed(replica(3, 9), 0, true)))
	if got := actionsOf(d, "unseal"); len(got) != 2 {
		t.Fatalf("unseal %v, want s0-1 and s0-3", got)
	}
	if got := actionsOf(d, "seal"); len(got) != 0 {
		t.Fatalf("a primary that answers seals nobody: %v", got)
	}
}

// detachedFrom is a replica of s0-0 whose link is down (it still names s0-0).
func detachedFrom(n Node) Node {
	n.Valkey.LinkUp = false
	return n
}

// The fence wait runs from the last seal when every node visible at the election was sealed
// while it had no connection, and from the election otherwise: one replica sealed while linked,
// or sealed on another operator incarnation's clock, puts it back to the election.
func TestTheFenceWaitRunsFromTheLastSealOnlyWhenEveryVisibleNodeWasSealedUnlinked(t *testing.T) {
	spec := testSpec(2) // FenceTimeout 10 s
	elect := func(n1, n2 Node) Decision {
		t.Helper()
		lost := unreachable(primary(9), 3)
		d := Decide(steadyState(), obsAt(4, spec, lost, n1, n2))
		if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
			t.Fatalf("want primary-lost, got %s", d)
		}
		d = Decide(d.Next, obsAt(5, spec, lost, detached(n1), detached(n2)))
		if d.Transition == nil || d.Transition.Event != EventCandidateElected {
			t.Fatalf("want candidate-elected, got %s", d)
		}
		return d
	}
	cases := []struct {
		name   string
		n1, n2 Node
		from   time.Time
	}{
		{"both sealed unlinked", sealed(detachedFrom(replica(1, 9)), 1, true), sealed(detachedFrom(replica(2, 8)), 2, true), at(2)},
		{"one sealed while linked", sealed(detachedFrom(replica(1, 9)), 1, true), sealed(detachedFrom(replica(2, 8)), 2, false), time.Time{}},
		{"one not sealed", sealed(detachedFrom(replica(1, 9)), 1, true), detachedFrom(replica(2, 8)), time.Time{}},
		{"one sealed on another clock", sealed(detachedFrom(replica(1, 9)), 1, true), func() Node {
			n := sealed(detachedFrom(replica(2, 8)), 2, true)
			n.Valkey.Sealed.Clock = "another incarnation"
			return n
		}(), time.Time{}},
	}
	for _, c := range cases {
		d := elect(c.n1, c.n2)
		if !d.Next.Op.Election.FenceFrom.Equal(c.from) {
			t.Fatalf("%s: FenceFrom %v, want %v", c.name, d.Next.Op.Election.FenceFrom, c.from)
		}
		// Promoted, the candidate waits for the fence; its end depends on where it runs from.
		p := d.Next
		cand := detached(c.n1)
		cand.Valkey.Role, cand.Valkey.SyncFenced = RolePrimary, false
		cand.Valkey.ReplID, cand.Valkey.ReplID2, cand.Valkey.SecondOffset = "h2", "h1", 10
		p.Shards[0].History = History{ID: "h2", PrevID: "h1", PrevEnd: 10}
		end := 15 // the election at 5 plus FenceTimeout
		if !c.from.IsZero() {
			end = 12 // the last seal at 2 plus FenceTimeout
		}
		lost := unreachable(primary(9), 9)
		other := detached(c.n2)
		other.Valkey.PrimaryHost, other.Valkey.LinkUp = "10.0.0.2", true
		if d := Decide(p, obsAt(end-1, spec, lost, cand, other)); d.Transition != nil {
			t.Fatalf("%s: the fence ended a second early: %s", c.name, d)
		} else if d.Waiting.Kind != WaitOldPrimaryMayWrite {
			t.Fatalf("%s: waiting %q, want the fence's end named", c.name, d.Waiting)
		}
		d = Decide(p, obsAt(end, spec, lost, cand, other))
		if d.Transition == nil || d.Transition.Event != EventFailoverComplete {
			t.Fatalf("%s: want failover-complete at %d s, got %s", c.name, end, d)
		}
		if f := d.Transition.Why.Fenced; f.How != FencedByTimeout || f.Timeout != spec.FenceTimeout || !f.SealedAt.Equal(c.from) {
			t.Fatalf("%s: fenced by %+v, want the fence timeout run from %v", c.name, f, c.from)
		}
	}
}
