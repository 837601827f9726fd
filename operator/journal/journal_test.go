package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// TestAPageIsBoundedInBytes: records of 100 KiB each (an observation of a large cluster is of
// that order), transitions alone or each followed by observations, are paged at the endpoint's
// largest limit in pages of at most MaxPageBytes as JSON, every record once and in order.
func TestAPageIsBoundedInBytes(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	t.Run("transitions", func(t *testing.T) {
		j, _ := open(t)
		const c = "ns/big/uid"
		for seq := uint64(1); seq <= 100; seq++ {
			if err := j.Append(c, machine.Entry{Seq: seq, Event: "e", Message: big}); err != nil {
				t.Fatal(err)
			}
		}
		pageInBytes(t, j, c, 100)
	})
	t.Run("observations", func(t *testing.T) {
		j, _ := open(t)
		const c = "ns/big/uid"
		j.SetObservationLimit(1000)
		for seq := uint64(1); seq <= 40; seq++ {
			if err := j.Append(c, machine.Entry{Seq: seq, Event: "e"}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				obs := observation(int(seq)*10+i, int64(i))
				obs.Nodes[0].Name = big
				j.Observe(c, seq, obs)
			}
			j.Flush()
		}
		pageInBytes(t, j, c, 160)
	})
}

// pageInBytes pages through c's journal and checks every page's size and that n records come,
// each once, in order.
func pageInBytes(t *testing.T, j *Journal, c string, n int) {
	t.Helper()
	var got []Record
	from, pages := uint64(0), 0
	for {
		recs, next, err := j.Page(c, from, 1000, true)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		body, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > MaxPageBytes {
			t.Fatalf("page %d: %d records, %d bytes as JSON, more than %d", pages, len(recs), len(body), MaxPageBytes)
		}
		got = append(got, recs...)
		if next == 0 {
			break
		}
		from = next
	}
	if len(got) != n {
		t.Fatalf("%d records in %d pages, want %d", len(got), pages, n)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq() < got[i-1].Seq() || got[i].Kind == KindTransition && got[i].Seq() != got[i-1].Seq()+1 {
			t.Fatalf("record %d (seq %d, %s) after seq %d", i, got[i].Seq(), got[i].Kind, got[i-1].Seq())
		}
	}
	if pages < 3 {
		t.Errorf("%d pages for %d records of 100 KiB", pages, n)
	}
}
