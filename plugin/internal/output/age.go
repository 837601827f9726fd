package output

import (
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Age is how long before now t was, in kubectl's short form ("45s", "12m", "3h5m", "2d").
// A zero t is unknown. A t slightly in the future (the operator's clock ahead of this
// machine's) shows as 0s rather than kubectl's "<invalid>": the skew is not the user's
// problem.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

// Timestamp is t in RFC 3339 and UTC, the same on every machine whatever its time zone, as
// in the API's own timestamps.
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return t.UTC().Format(time.RFC3339)
}
