package valkey

import "time"

// IsolatedPrimaryStopsWritesWithin is how long after its replicas' last acknowledgement a
// primary with min-replicas-to-write >= 1 may still accept a write, for min-replicas-max-lag
// maxLag. Valkey counts a replica as good while (unixtime - its last ACK's unixtime) <= maxLag,
// both in whole seconds, and refreshes that count once a second (replicationCron): so up to
// maxLag+1 s for the rounding, plus up to 1 s until the refresh. Measured with a replica
// whose acknowledgements stop at a known instant (TestAnIsolatedPrimaryRefusesWritesWithinTheBound):
// 2.2-3.2 s for maxLag 2, so maxLag+1 s, the first bound used here, was short.
func IsolatedPrimaryStopsWritesWithin(maxLag time.Duration) time.Duration {
	return maxLag + 2*time.Second
}
