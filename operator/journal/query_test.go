package journal

import (
	"net/url"
	"strconv"
	"testing"
)

// The journal API's parameters under Go's fuzzer: whatever the query, a page is bounded (1 to
// the maximum) or the request is refused, continue is read as the sequence it names, and a
// page's own token reads back as where it ends.
func FuzzPageQuery(f *testing.F) {
	const maxPage = 1000
	for _, s := range []string{"", "limit=10", "limit=0", "limit=-1", "limit=99999999999999999999", "continue=42&observations=true", "continue=x", "limit=5&limit=7", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p, err := ParsePageQuery(q, maxPage)
		if err != nil {
			return
		}
		if p.Limit < 1 || p.Limit > maxPage {
			t.Fatalf("%q: a page of %d records", raw, p.Limit)
		}
		if v := q.Get("continue"); v != "" {
			if n, err := strconv.ParseUint(v, 10, 64); err != nil || n != p.From {
				t.Fatalf("%q: continue %q read as %d", raw, v, p.From)
			}
		}
		again, err := ParsePageQuery(url.Values{"continue": {strconv.FormatUint(p.From, 10)}}, maxPage)
		if err != nil || again.From != p.From {
			t.Fatalf("continue=%d read back as %d, %v", p.From, again.From, err)
		}
	})
}
