package localcluster

import (
	"testing"
	"time"
)

// TestRestartBackoffIsKubelets replays crash loops through the back-off at chosen instants:
// kubelet restarts a first crash at once, then waits 10 s, 20 s, 40 s ... up to 5 minutes
// after each exit, and starts afresh once a run lasted twice the maximum.
func TestRestartBackoffIsKubelets(t *testing.T) {
	b := &restartBackoff{initial: kubeletBackOff, max: kubeletMaxBackOff}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	for range 9 {
		now = now.Add(time.Second) // the container runs a second, then exits
		finished := now
		wait, delay := b.wait(finished, now)
		if wait != delay {
			t.Fatalf("at the exit the wait is the whole delay: %s, %s", wait, delay)
		}
		// Half-way through, the rest is left.
		if w, _ := b.wait(finished, now.Add(wait/2)); w != wait-wait/2 {
			t.Fatalf("half-way through %s, %s left", wait, w)
		}
		waits = append(waits, wait)
		now = now.Add(wait)
		if w, _ := b.wait(finished, now); w != 0 {
			t.Fatalf("at the end of the back-off %s is still left", w)
		}
		b.restarted(finished, now)
	}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	// A run of more than 10 minutes: the next exit restarts at once, and the one after waits
	// 10 s again.
	now = now.Add(10*time.Minute + time.Second)
	if w, _ := b.wait(now, now); w != 0 {
		t.Fatalf("after a long run the restart waits %s", w)
	}
	b.restarted(now, now)
	now = now.Add(time.Second)
	if w, d := b.wait(now, now); w != 10*time.Second || d != 10*time.Second {
		t.Fatalf("the crash after a long run's restart waits %s (%s), want 10s", w, d)
	}
	// A run just under 10 minutes keeps the doubling.
	b.restarted(now, now.Add(10*time.Second))
	now = now.Add(10*time.Second + 9*time.Minute)
	if w, _ := b.wait(now, now); w != 20*time.Second {
		t.Fatalf("after a run of 9 minutes the restart waits %s, want 20s", w)
	}
}
