package resp

import (
	"bufio"
	"bytes"
	"runtime"
	"testing"
)

// readReply reads what a server (or anything at its address) sends: whatever the bytes, it
// ends with a reply or an error, and allocates nothing near what a header claims.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR unknown command\r\n", ":42\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$3\r\nfoo\r\n:1\r\n", "*1\r\n*2\r\n+a\r\n$0\r\n\r\n",
		"$536870912\r\nshort", "*2147483647\r\n", "$99999999999999\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := readReply(bufio.NewReader(bytes.NewReader(b)))
		runtime.ReadMemStats(&after)
		if err == nil && v != nil {
			if _, ok := v.(string); !ok {
				switch v.(type) {
				case int64, []any, Error:
				default:
					t.Fatalf("a reply of type %T", v)
				}
			}
		}
		// The input, the reader's buffer and the reply, several times over: not what a header
		// claims.
		if grown := after.TotalAlloc - before.TotalAlloc; grown > uint64(64*len(b))+1<<20 {
			t.Fatalf("%d bytes of input allocated %d", len(b), grown)
		}
	})
}

// A header that claims more than the bytes that follow is refused without allocating its
// claim (a bulk string of 512 MiB, an array of 2^31 items).
func TestAClaimIsNotAllocatedAhead(t *testing.T) {
	for _, s := range []string{"$536870912\r\nshort", "*2147483647\r\n:1\r\n"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := readReply(bufio.NewReader(bytes.NewReader([]byte(s))))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%q: accepted", s)
		}
		if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
			t.Errorf("%q: allocated %d bytes", s, grown)
		}
	}
}
