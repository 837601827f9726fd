package machine

import (
	"testing"
)

// Valkey (8.x) restores the replication ID and offset only from RDB files: a Durable node
// restarted from its append-only file reports a fresh ID at offset 0 with all its keys. These
// tests pin what the machine makes of such nodes (found on real processes by e2e/chaos:
// TestDataSurvivesOnTheOneNodeThatKeptIt, TestWAITAcknowledgedWritesSurviveARestartOfEveryPod).

func durableSpec(replicas int) Spec {
	s := testSpec(replicas)
	s.Persistence = true
	return s
}

// fromAppendOnlyFile is node ord restarted from its append-only file: a new process, a fresh
// history at offset 0, fenced and following nothing, holding keys.
func fromAppendOnlyFile(ord int, keys int64) Node {
	n := node(ord, RoleReplica, "fresh-"+string(rune('a'+ord)), 0)
	n.Valkey.RunID += "-again"
	n.Valkey.Keys = keys
	return n
}

// fsyncAlwaysSpec is durableSpec with every write fsynced before it is acknowledged
// (appendfsync always): only then is the writer restarted from its file complete.
func fsyncAlwaysSpec(replicas int) Spec {
	s := durableSpec(replicas)
	s.FsyncAlways = true
	return s
}

// electAfterLoss runs primary-lost then the election and returns the second decision.
func electAfterLoss(t *testing.T, p Persisted, spec Spec, nodes ...Node) Decision {
	t.Helper()
	d := Decide(p, obsAt(5, spec, nodes...))
	if d.Transition == nil || d.Transition.Event != EventPrimaryLost {
		t.Fatalf("want primary-lost, got %s", d)
	}
	d = Decide(d.Next, obsAt(6, spec, nodes...))
	if d.Transition == nil || d.Transition.Event != EventCandidateElected {
		t.Fatalf("want candidate-elected, got %s", d)
	}
	return d
}

func TestAKeptNodeAtOffsetZeroIsNotEmpty(t *testing.T) {
	// The primary and one replica lost their volumes; the other replica came back from its
	// append-only file. Before, all three looked empty (offset 0) and the lowest ordinal was
	// elected: the node with the data full-synced from an empty one.
	wiped := fromAppendOnlyFile(0, 0)
	empty := fromAppendOnlyFile(1, 0)
	kept := fromAppendOnlyFile(2, 20)
	d := electAfterLoss(t, steadyState(), durableSpec(2), wiped, empty, kept)
	if d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2, the only node holding data, got %s", d)
	}
	if d.Next.Op.Election.Reseed {
		t.Fatal("the shard's data is on s0-2: no reseed")
	}
	if d.Transition.Why.OverByKeys != "" {
		t.Fatalf("empty nodes need no estimate: %s", d.Transition.Message)
	}
}

func TestTheWriterRestartedFromItsAppendOnlyFileHoldsEverything(t *testing.T) {
	// Every pod restarted at once. The lagging replica s0-1 holds fewer keys; the writer s0-0
	// holds every write (fsynced before each reply); s0-2 as many keys as the writer. The
	// writer is elected: every write of the line went through it.
	d := electAfterLoss(t, steadyState(), fsyncAlwaysSpec(2), fromAppendOnlyFile(0, 40), fromAppendOnlyFile(1, 20), fromAppendOnlyFile(2, 40))
	if d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, the restarted writer, got %s", d)
	}
	// Against a replica of its own history it needs no estimate, however far the replica got.
	behind := detached(replica(1, 500))
	behind.Valkey.Keys = 60
	d = electAfterLoss(t, steadyState(), fsyncAlwaysSpec(1), fromAppendOnlyFile(0, 40), behind)
	if d.Next.Op.Election.Candidate != "s0-0" {
		t.Fatalf("want s0-0, whose file holds all of h1, got %s", d)
	}
	if d.Transition.Why.OverByKeys != "" {
		t.Fatalf("the writer contains h1 without an estimate: %s", d.Transition.Message)
	}
	// Its new history records that it continues all of h1: a node of h1 stays a prefix.
	if h := d.Next.Shards[0].History; h.PrevID != "h1" || h.PrevEnd < 1<<40 {
		t.Fatalf("want the elected history to continue all of h1, got %+v", h)
	}
	// Without persistence nothing says the writer kept everything: a Cache node at a fresh
	// ID with keys is unmeasured like any other, and the replica's keys win.
	cache := testSpec(1)
	d = electAfterLoss(t, steadyState(), cache, fromAppendOnlyFile(0, 40), behind)
	if d.Next.Op.Election.Candidate != "s0-1" || d.Transition.Why.OverByKeys == "" {
		t.Fatalf("want s0-1 by key count, got %s: %s", d, d.Transition.Message)
	}
}

// With appendfsync everysec (Valkey's default, and the Durable profile's) the writer's file
// may lack its last two seconds: the write to the file is postponed while a background fsync
// runs, and the replies go out meanwhile. The real chaos suite lost a WAIT-acknowledged write
// when the machine trusted the restarted writer anyway. The writer is then one more
// unmeasured node: the replica that holds more keys wins, and so does one that holds as many
// (its extent is measured, the writer's is not).
func TestTheWriterRestartedWithoutFsyncAlwaysIsNotTrusted(t *testing.T) {
	ahead := detached(replica(1, 500))
	ahead.Valkey.Keys = 60
	d := electAfterLoss(t, steadyState(), durableSpec(1), fromAppendOnlyFile(0, 40), ahead)
	if d.Next.Op.Election.Candidate != "s0-1" || d.Transition.Why.OverByKeys == "" {
		t.Fatalf("want s0-1, which holds writes the writer's file lacks, by key count; got %s: %s", d, d.Transition.Message)
	}
	if h := d.Next.Shards[0].History; h.PrevEnd >= WholeHistory {
		t.Fatalf("nothing says the writer's file holds all of h1: %+v", h)
	}
	ahead.Valkey.Keys = 40
	d = electAfterLoss(t, steadyState(), durableSpec(1), fromAppendOnlyFile(0, 40), ahead)
	if d.Next.Op.Election.Candidate != "s0-1" {
		t.Fatalf("as many keys: want the measured replica s0-1, got %s", d)
	}
	// The writer with more keys than any replica still wins (it took writes nobody else got).
	ahead.Valkey.Keys = 30
	d = electAfterLoss(t, steadyState(), durableSpec(1), fromAppendOnlyFile(0, 40), ahead)
	if d.Next.Op.Election.Candidate != "s0-0" || d.Transition.Why.OverByKeys == "" {
		t.Fatalf("want s0-0 by key count, got %s: %s", d, d.Transition.Message)
	}
}

func TestUnmeasuredNodesAreComparedByKeyCountAndTheElectionSaysSo(t *testing.T) {
	// The writer came back empty; s0-1 stayed up (h1 at 100, 10 keys), s0-2 restarted from
	// its append-only file with 30 keys. Nothing can place s0-2's data in h1: keys decide,
	// and the transition says so.
	measured := detached(replica(1, 100))
	measured.Valkey.Keys = 10
	d := electAfterLoss(t, steadyState(), durableSpec(2), fromAppendOnlyFile(0, 0), measured, fromAppendOnlyFile(2, 30))
	if d.Next.Op.Election.Candidate != "s0-2" {
		t.Fatalf("want s0-2, more keys, got %s", d)
	}
	if why := d.Transition.Why; why.Kind != ReasonElected || why.OverByKeys != "s0-1" || why.Keys != 30 {
		t.Fatalf("the election must say it rested on key counts over s0-1: %+v", why)
	}
	// And the other way round.
	measured.Valkey.Keys = 31
	d = electAfterLoss(t, steadyState(), durableSpec(2), fromAppendOnlyFile(0, 0), measured, fromAppendOnlyFile(2, 30))
	if d.Next.Op.Election.Candidate != "s0-1" || d.Transition.Why.OverByKeys == "" {
		t.Fatalf("want s0-1 by key count, got %s: %s", d, d.Transition.Message)
	}
}

func TestOffsetZeroWithKeysHoldsItsHistorysStartingData(t *testing.T) {
	l := lineage{}
	started := Valkey{ReplID: "h9", Offset: 0, Keys: 5, SecondOffset: -1}
	if l.covers(Valkey{ReplID: "h1", Offset: 50, SecondOffset: -1}, started) {
		t.Fatal("a node of another history does not hold h9's starting data")
	}
	if !l.covers(Valkey{ReplID: "h9", Offset: 3, SecondOffset: -1}, started) {
		t.Fatal("a node of h9 holds h9's starting data")
	}
	if !l.covers(Valkey{ReplID: "h1", Offset: 50, SecondOffset: -1}, Valkey{ReplID: "h9", SecondOffset: -1}) {
		t.Fatal("an empty node is contained in anything")
	}
}
