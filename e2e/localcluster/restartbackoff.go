package localcluster

import "time"

// Kubelet's back-off constants (pkg/kubelet: backOffPeriod and MaxContainerBackOff): the
// first delay, doubled at every crash up to the maximum; the same pair bounds image pulls.
const (
	kubeletBackOff    = 10 * time.Second
	kubeletMaxBackOff = 5 * time.Minute
	// kubeletSyncBackOff is how long kubelet's pod worker waits before syncing a Pod again
	// after a sync that failed (a container that could not be created): pod_workers.go's
	// backOffPeriod.
	kubeletSyncBackOff = 10 * time.Second
)

// restartBackoff is kubelet's back-off for one container's restarts, as kuberuntime's doBackOff
// drives client-go's flowcontrol.Backoff with it: the entry is made at the first restart (so a
// container that exits for the first time, or after a long run, restarts at once) and doubles
// at each restart after; a restart that is due while the container's last exit is within the
// entry's delay waits until that delay has passed since the exit. An exit more than twice the
// maximum after the last restart (the container ran for 10 minutes) starts afresh.
type restartBackoff struct {
	initial, max time.Duration
	delay        time.Duration // the entry's current delay; 0: no entry
	lastRestart  time.Time
}

// wait is how long a container that exited at finished must wait at now before its restart;
// delay is the back-off kubelet names in its message ("back-off 20s restarting ...").
func (b *restartBackoff) wait(finished, now time.Time) (wait, delay time.Duration) {
	if b.delay == 0 || b.expired(finished) {
		return 0, 0
	}
	if w := b.delay - now.Sub(finished); w > 0 {
		return w, b.delay
	}
	return 0, 0
}

// restarted records a restart at now of a container that exited at finished (Backoff.Next).
func (b *restartBackoff) restarted(finished, now time.Time) {
	if b.delay == 0 || b.expired(finished) {
		b.delay = b.initial
	} else {
		b.delay = min(2*b.delay, b.max)
	}
	b.lastRestart = now
}

// expired is flowcontrol's hasExpired: stable for twice the maximum since the last restart.
func (b *restartBackoff) expired(finished time.Time) bool {
	return finished.Sub(b.lastRestart) > 2*b.max
}
