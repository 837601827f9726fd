package journal

import (
	"errors"
	"net/url"
	"strconv"
)

// PageQuery is what a read of the journal's API asks for: up to Limit records from sequence
// From on.
type PageQuery struct {
	Limit int
	From  uint64
	// Observations: also the observations that caused no transition (for replays), only for a
	// reader that asks: an older plugin would show each as a record of a kind it does not know.
	Observations bool
}

// ParsePageQuery reads a journal read's parameters (limit, continue, observations) as any
// caller the API server lets through sends them, refusing what is not a number where one is
// expected; no limit, or one above maxPage, is maxPage.
func ParsePageQuery(q url.Values, maxPage int) (PageQuery, error) {
	p := PageQuery{Limit: maxPage, Observations: q.Get("observations") == "true"}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return PageQuery{}, errors.New("limit must be a positive number")
		}
		p.Limit = min(n, maxPage)
	}
	if v := q.Get("continue"); v != "" {
		from, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return PageQuery{}, errors.New("continue must be the value a previous page gave")
		}
		p.From = from
	}
	return p, nil
}
