package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

func observation(sec int, offset int64) machine.Observation {
	return machine.Observation{
		Time: time.Unix(int64(sec), 0).UTC(), Clock: "op-1",
		Spec:  machine.Spec{Mode: machine.ModeReplication, Shards: 1, Replicas: 1, FailureThreshold: 3, FenceTimeout: 10 * time.Second},
		Nodes: []machine.Node{{Name: "c-0", Reachable: true, Valkey: machine.Valkey{Role: machine.RolePrimary, Offset: offset}}},
	}
}

// Observations are stored in the order they were taken, between the transitions they follow;
// one equal to the previous apart from its time is a repeat (no observation); a transition's
// observation counts as the previous one.
func TestObservationsAreOrderedAndRepeatsAreCompact(t *testing.T) {
	j, _ := open(t)
	const c = "ns/a/uid-1"
	j.Observe(c, 0, observation(1, 0))
	j.Observe(c, 0, observation(2, 0))
	e := entry(1, machine.Bootstrapping, machine.Steady)
	o3 := observation(3, 5)
	e.Observed, e.After = &o3, machine.Persisted{State: machine.Steady, Seq: 1}
	if err := j.Append(c, e); err != nil {
		t.Fatal(err)
	}
	j.Observe(c, 1, observation(4, 5))
	j.Observe(c, 1, observation(5, 9))
	j.Flush()
	recs, err := j.Records(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		switch r.Kind {
		case KindTransition:
			got = append(got, "t1")
		case KindObservation:
			s := "o" + r.Observed.Time.Format("05")
			if r.Observed.Observation == nil {
				s += "(repeat)"
			}
			got = append(got, s)
		}
	}
	want := []string{"o01", "o02(repeat)", "t1", "o04(repeat)", "o05"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if last, _ := j.Last(c); last != 1 {
		t.Fatalf("Last = %d, want 1", last)
	}
	// The journal replays: every decision can be taken again (whether the same is the
	// machine's business, not checked on these made-up observations).
	rep := replay.Replay(replay.Journal{Records: asReplay(t, recs)}, nil)
	if rep.NotReplayable != 0 {
		t.Fatalf("%d records not replayable", rep.NotReplayable)
	}
}

// A cluster keeps its newest ObservationLimit observations; transitions are never deleted.
func TestObservationsAreBounded(t *testing.T) {
	j, _ := open(t)
	const c = "ns/a/uid-1"
	j.SetObservationLimit(5)
	for i := 0; i < 20; i++ {
		if i == 10 {
			if err := j.Append(c, entry(1, machine.Bootstrapping, machine.Steady)); err != nil {
				t.Fatal(err)
			}
		}
		seq := uint64(0)
		if i >= 10 {
			seq = 1
		}
		j.Observe(c, seq, observation(i, int64(i)))
	}
	j.Flush()
	recs, err := j.Records(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	var times []int
	transitions := 0
	for _, r := range recs {
		if r.Kind == KindObservation {
			times = append(times, int(r.Observed.Time.Unix()))
		} else {
			transitions++
		}
	}
	if !reflect.DeepEqual(times, []int{15, 16, 17, 18, 19}) || transitions != 1 {
		t.Fatalf("kept observations %v and %d transitions, want the newest 5 and 1", times, transitions)
	}
	j.SetObservationLimit(0)
	j.Observe(c, 1, observation(30, 1))
	j.Flush()
	if recs2, _ := j.Records(c, 0); len(recs2) != len(recs) {
		t.Fatal("with a limit of 0 an observation was journaled")
	}
}

// A page never ends among the observations that follow a transition, and the pages together
// are the journal, each record once.
func TestPagesKeepObservationsWithTheirTransition(t *testing.T) {
	j, _ := open(t)
	const c = "ns/a/uid-1"
	// Observations of a new cluster, before its first transition: on the first page with it.
	j.Observe(c, 0, observation(1, 0))
	j.Observe(c, 0, observation(2, 1))
	from := machine.Bootstrapping
	for seq := uint64(1); seq <= 4; seq++ {
		if err := j.Append(c, entry(seq, from, machine.Steady)); err != nil {
			t.Fatal(err)
		}
		from = machine.Steady
		for i := 0; i < int(seq); i++ {
			j.Observe(c, seq, observation(int(seq)*10+i, int64(i)))
		}
	}
	j.Flush()
	all, _ := j.Records(c, 0)
	if len(all) != 2+4+1+2+3+4 {
		t.Fatalf("%d records", len(all))
	}
	var paged []Record
	var starts []uint64
	for next, pages := uint64(0), 0; ; pages++ {
		recs, n, err := j.Page(c, next, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || (pages > 0 && recs[0].Kind != KindTransition) {
			t.Fatalf("page %d starts with %+v", pages, recs)
		}
		starts = append(starts, recs[0].Seq())
		paged = append(paged, recs...)
		if n == 0 {
			break
		}
		next = n
	}
	if !reflect.DeepEqual(paged, all) {
		t.Fatalf("the pages are not the journal")
	}
	if !reflect.DeepEqual(starts, []uint64{0, 2, 3, 4}) {
		t.Fatalf("pages start at %v, want 0 2 3 4 (2 observations before the first transition, then groups of 2, 3, 4 and 5 records, in pages of 3)", starts)
	}
	if recs, _, _ := j.Page(c, 0, 1, true); len(recs) != 2+2 || recs[2].Kind != KindTransition {
		t.Fatalf("a first page of 1 holds %d records: it must hold the first transition and its group", len(recs))
	}
	// Without observations (a reader that does not ask for them): the transitions only, one
	// per page of 1.
	recs, next, _ := j.Page(c, 0, 1, false)
	if len(recs) != 1 || recs[0].Kind != KindTransition || next != 2 {
		t.Fatalf("a page without observations: %d records, next %d", len(recs), next)
	}
}

// asReplay reads the records as the replay does (the JSON the journal endpoint serves).
func asReplay(t *testing.T, recs []Record) []replay.Record {
	t.Helper()
	data, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	var out []replay.Record
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// machine/replay's Record mirrors this package's: every kind of record decodes into it and
// encodes back to the same JSON.
func TestReplayRecordMirrorsRecord(t *testing.T) {
	j, _ := open(t)
	const c = "ns/a/uid-1"
	if _, err := j.Backfill(c, []machine.HistoryRecord{{Seq: 2, From: machine.Bootstrapping, To: machine.Steady, Event: "bootstrap-complete", Time: time.Unix(2, 0).UTC()}}); err != nil {
		t.Fatal(err)
	}
	e := entry(3, machine.Steady, machine.Rolling)
	o := observation(3, 1)
	e.Observed = &o
	if err := j.Append(c, e); err != nil {
		t.Fatal(err)
	}
	j.Observe(c, 3, observation(4, 2))
	j.Observe(c, 3, observation(5, 2))
	j.Flush()
	recs, _ := j.Records(c, 0)
	kinds := map[Kind]bool{}
	mirrored := asReplay(t, recs)
	for i, r := range recs {
		kinds[r.Kind] = true
		mine, _ := json.Marshal(mirrored[i])
		theirs, _ := json.Marshal(r)
		if !bytes.Equal(mine, theirs) {
			t.Errorf("record %d does not round-trip:\nreplay  %s\njournal %s", i, mine, theirs)
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("kinds %v: every kind must be checked", kinds)
	}
	if replay.KindTransition != string(KindTransition) || replay.KindBackfilled != string(KindBackfilled) || replay.KindGap != string(KindGap) || replay.KindObservation != string(KindObservation) {
		t.Error("the kinds' names differ")
	}
}

// Observations of many clusters queued at once are all written by Close (or counted as
// dropped), each cluster within its bound, and Observe after Close is harmless.
func TestObservationsOfManyClustersAndClose(t *testing.T) {
	j, path := open(t)
	j.SetObservationLimit(50)
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				j.Observe(fmt.Sprintf("ns/c%d/uid", c), 0, observation(i, int64(i)))
			}
		}(c)
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j.Observe("ns/c0/uid", 0, observation(999, 1))
	dropped := j.Dropped()
	j2, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j2.Close() }()
	total := 0
	for c := 0; c < 8; c++ {
		recs, err := j2.Records(fmt.Sprintf("ns/c%d/uid", c), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 50 {
			t.Fatalf("cluster %d kept %d observations, the bound is 50", c, len(recs))
		}
		total += len(recs)
	}
	if total == 0 || (dropped == 0 && total != 8*50) {
		t.Fatalf("%d observations kept, %d dropped", total, dropped)
	}
}
