package machine

import "testing"

// A primary without a replication backlog takes a new ID (and no previous one) when its
// first replica syncs. The machine records the new ID as continuing the old one, so that the
// next failover still knows the replicas of the renamed history.
func TestARenamedHistoryIsRecordedAndTheNextFailoverFindsItsReplicas(t *testing.T) {
	spec := durableSpec(2)
	p := steadyState() // s0-0, run-0, h1
	renamed := primary(40)
	renamed.Valkey.ReplID = "h1-renamed"
	d := Decide(p, obsAt(5, spec, renamed, replicaOf("h1-renamed", 1, 40), replicaOf("h1-renamed", 2, 40)))
	if d.Transition == nil || d.Transition.Event != EventHistoryRenamed || d.Next.State != Steady {
		t.Fatalf("want history-renamed in Steady, got %s", d)
	}
	if h := d.Next.Shards[0].History; h.ID != "h1-renamed" || h.PrevID != "h1" || h.PrevEnd != 41 {
		t.Fatalf("want h1-renamed continuing h1 below 41, got %+v", h)
	}
	// Lost afterwards: the replicas of the renamed history are candidates (without the
	// record they were in no known history and the failover waited forever).
	gone := unreachable(renamed, 5)
	d = Decide(d.Next, obsAt(10, spec, gone, replicaOf("h1-renamed", 1, 40), replicaOf("h1-renamed", 2, 38)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(11, spec, gone, detached(replicaOf("h1-renamed", 1, 40)), detached(replicaOf("h1-renamed", 2, 38))))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected || d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("want s0-1 elected, got %s", d)
	}
}

func TestARenameBeforeTheElectionMovesTheLostHistoryToo(t *testing.T) {
	spec := durableSpec(2)
	p := steadyState()
	gone := unreachable(primary(40), 5)
	d := Decide(p, obsAt(5, spec, gone, replica(1, 40), replica(2, 40)))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	// The lost primary answers again, the same process, under a renamed history.
	back := primary(40)
	back.Valkey.ReplID = "h1-renamed"
	d = Decide(d.Next, obsAt(6, spec, back, detached(replica(1, 40)), detached(replica(2, 40))))
	if d.Transition == nil || d.Transition.Event != EventHistoryRenamed || d.Next.State != FailingOver {
		t.Fatalf("want history-renamed in FailingOver, got %s", d)
	}
	if d.Next.Op.Election.LostHistory != d.Next.Shards[0].History {
		t.Fatalf("the lost history must follow the rename: op %+v, record %+v", d.Next.Op.Election.LostHistory, d.Next.Shards[0].History)
	}
}

// replicaOf is a replica of s0-0 in history id.
func replicaOf(id string, ord int, offset int64) Node {
	n := replica(ord, offset)
	n.Valkey.ReplID = id
	return n
}
