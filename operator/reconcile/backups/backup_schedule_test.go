package backups

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestDueTimeFindsTheNewestMissedTime: whatever the schedule's period and however long ago the
// last backup was, the due time is the schedule's newest time at or before now, and none when
// the next time is still ahead (found in review: a 24-hour look-back made weekly schedules
// silent).
func TestDueTimeFindsTheNewestMissedTime(t *testing.T) {
	now := time.Date(2026, 11, 26, 7, 0, 30, 0, time.UTC) // a Thursday
	cases := []struct {
		spec string
		last time.Time
		want time.Time
	}{
		{"@weekly", now.Add(-8 * 7 * 24 * time.Hour), time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)},
		{"@monthly", now.Add(-400 * 24 * time.Hour), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"0 3 * * *", now.Add(-time.Hour), time.Time{}},
		{"0 3 * * *", now.Add(-5 * time.Hour), time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)},
		{"@every 1s", now.Add(-90 * 24 * time.Hour), now},
		{"* * * * *", now.Add(-45 * time.Second), time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)},
		{"* * * * *", time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC), time.Time{}},
	}
	for _, c := range cases {
		sched, err := cron.ParseStandard(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if got := dueTime(sched, c.last, now); !got.Equal(c.want) {
			t.Errorf("%s, last %s: due %s, want %s", c.spec, c.last, got, c.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %s", c.spec, d)
		}
	}
}
