package journal

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

func open(t *testing.T) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j, path
}

func entry(seq uint64, from, to machine.State) machine.Entry {
	return machine.Entry{Seq: seq, From: from, To: to, Message: "m", Time: time.Unix(int64(seq), 0).UTC()}
}

func TestAppendIsOrderedIdempotentAndSurvivesReopen(t *testing.T) {
	j, path := open(t)
	const c = "ns/a/uid-1"
	if err := j.Append(c, entry(1, machine.Bootstrapping, machine.Steady)); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(c, entry(1, machine.Bootstrapping, machine.Steady)); err != nil {
		t.Fatalf("re-appending the same entry must be a no-op, got %v", err)
	}
	if err := j.Append(c, entry(3, machine.Steady, machine.Rolling)); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("appending seq 3 after 1: got %v, want ErrOutOfOrder", err)
	}
	if err := j.Append(c, entry(2, machine.Steady, machine.Rolling)); err != nil {
		t.Fatal(err)
	}
	if err := j.Append("ns/b/uid-2", entry(1, machine.Bootstrapping, machine.Steady)); err != nil {
		t.Fatalf("clusters have their own sequences: %v", err)
	}
	_ = j.Close()
	j2, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j2.Close() }()
	recs, err := j2.Records(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Entry.Seq != 1 || recs[1].Entry.To != machine.Rolling || recs[1].Kind != KindTransition {
		t.Fatalf("after reopen got %+v", recs)
	}
	if last, _ := j2.Last(c); last != 2 {
		t.Fatalf("Last = %d, want 2", last)
	}
	clusters, _ := j2.Clusters()
	if len(clusters) != 2 {
		t.Fatalf("Clusters = %v, want two", clusters)
	}
}

func TestBackfillCopiesWhatItLacksAndRecordsTheGap(t *testing.T) {
	j, _ := open(t)
	const c = "ns/a/uid-1"
	// status.history kept only the newest two of five transitions.
	history := []machine.HistoryRecord{
		{Seq: 4, From: machine.Steady, To: machine.Rolling, Event: "rollout-needed", Time: time.Unix(4, 0).UTC()},
		{Seq: 5, From: machine.Rolling, To: machine.Steady, Event: "rollout-complete", Time: time.Unix(5, 0).UTC()},
	}
	n, err := j.Backfill(c, history)
	if err != nil || n != 3 {
		t.Fatalf("Backfill wrote %d, %v; want a gap and two records", n, err)
	}
	recs, _ := j.Records(c, 0)
	if len(recs) != 3 || recs[0].Kind != KindGap || recs[0].GapFrom != 1 || recs[0].GapTo != 3 ||
		recs[1].Kind != KindBackfilled || recs[1].Entry.Seq != 4 || recs[2].Entry.Seq != 5 {
		t.Fatalf("got %+v", recs)
	}
	// A second backfill with the same history changes nothing; new transitions append after.
	if n, _ := j.Backfill(c, history); n != 0 {
		t.Fatalf("second Backfill wrote %d records", n)
	}
	if err := j.Append(c, entry(6, machine.Steady, machine.FailingOver)); err != nil {
		t.Fatalf("append after backfill: %v", err)
	}
	if last, _ := j.Last(c); last != 6 {
		t.Fatalf("Last = %d", last)
	}
}

func TestOpenTimesOutWhileAnotherProcessHoldsTheFile(t *testing.T) {
	_, path := open(t)
	start := time.Now()
	if _, err := Open(path, 200*time.Millisecond); err == nil {
		t.Fatal("a second Open of a locked journal succeeded")
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("Open gave up after %s, before its timeout", d)
	}
}

// TestPagesCoverTheJournalOnceInOrder: paging with any limit yields every record once, in
// order, and the last page says there is no more.
func TestPagesCoverTheJournalOnceInOrder(t *testing.T) {
	j, err := Open(filepath.Join(t.TempDir(), "j.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	const c = "ns/paged/uid"
	for seq := uint64(1); seq <= 7; seq++ {
		if err := j.Append(c, machine.Entry{Seq: seq, Event: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 2, 3, 7, 8} {
		var got []uint64
		from, pages := uint64(0), 0
		for {
			recs, next, err := j.Page(c, from, limit, false)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(recs) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(recs))
			}
			for _, r := range recs {
				got = append(got, r.Seq())
			}
			if next == 0 {
				break
			}
			from = next
		}
		if fmt.Sprint(got) != "[1 2 3 4 5 6 7]" || pages != (7+limit-1)/limit {
			t.Errorf("limit %d: records %v in %d pages", limit, got, pages)
		}
	}
}
