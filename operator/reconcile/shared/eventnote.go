package shared

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// maxEventNote is the API server's limit on an Event's note (events.k8s.io/v1): an Event with
// a longer one is refused whole, and the operator's broadcaster does not retry it.
const maxEventNote = 1024

// BoundedRecorder is an EventRecorder whose notes always fit maxEventNote: a long failure (an
// S3 SDK error quotes the request, its retries and the cause) would otherwise leave a Warning
// out that an SRE looks for (found by the operator suite: a backup's failure Event refused).
type BoundedRecorder struct {
	events.EventRecorder
}

// Eventf formats the note and shortens it to fit.
func (r BoundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, "%s", fitNote(fmt.Sprintf(note, args...)))
}

// fitNote shortens s to maxEventNote bytes, keeping its beginning (what failed) and its end
// (the innermost cause, and the next attempt's time a failure Event ends with), cut at rune
// boundaries.
func fitNote(s string) string {
	if len(s) <= maxEventNote {
		return s
	}
	const cut = " […] "
	tail := 320
	head := maxEventNote - tail - len(cut)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + cut + s[start:]
}
