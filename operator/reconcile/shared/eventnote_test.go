package shared

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestALongEventNoteFitsTheAPIServersLimit: a note over 1024 bytes keeps its beginning and its
// end within the limit, whole runes only; a short one is left as it is.
func TestALongEventNoteFitsTheAPIServersLimit(t *testing.T) {
	if got := fitNote("attempt 1: refused"); got != "attempt 1: refused" {
		t.Fatalf("a short note became %q", got)
	}
	long := "attempt 2: shard 0 (vk-1): " + strings.Repeat("é retried; ", 300) + "connect: connection refused (next attempt at 12:00:05)"
	got := fitNote(long)
	if len(got) > maxEventNote || !utf8.ValidString(got) {
		t.Fatalf("%d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), maxEventNote)
	}
	if !strings.HasPrefix(got, "attempt 2: shard 0 (vk-1): ") || !strings.HasSuffix(got, "connection refused (next attempt at 12:00:05)") || !strings.Contains(got, "[…]") {
		t.Fatalf("the note lost its beginning or its end: %q", got)
	}
}
