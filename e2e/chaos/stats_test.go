package chaos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats add up over every schedule of the run (rapid's reproduction and shrinking runs
// included: each is a real run).
type stats struct {
	mu          sync.Mutex
	schedules   int
	recreated   int
	faults      map[string]int // played, by kind
	skipped     map[string]int // could not be played, by kind
	violations  map[string]int // by kind
	transitions map[string]int // recorded during schedules, by event
	durations   []time.Duration
	toSteady    []time.Duration

	tried, plain, waited, waitZero, lostPlain, exempt int

	failing   []string
	smallest  string
	smallestN int
}

func newStats() *stats {
	return &stats{faults: map[string]int{}, skipped: map[string]int{}, violations: map[string]int{}, transitions: map[string]int{}}
}

func (s *stats) beginSchedule() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.schedules++
	return s.schedules
}

func (s *stats) endSchedule(d, toSteady time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.durations = append(s.durations, d)
	s.toSteady = append(s.toSteady, toSteady)
}

func (s *stats) add(p *int, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*p += n
}

func (s *stats) count(m map[string]int, k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m[k]++
}

func (s *stats) addWrites(w *writer, lostPlain, exempt int) {
	w.mu.Lock()
	tried, plain, waited, zero := w.attempts, len(w.plain), len(w.waited), w.waitZero
	w.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried += tried
	s.plain += plain
	s.waited += waited
	s.waitZero += zero
	s.lostPlain += lostPlain
	s.exempt += exempt
}

func (s *stats) fail(report string, steps int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = append(s.failing, report)
	if s.smallest == "" || steps < s.smallestN {
		s.smallest, s.smallestN = report, steps
	}
}

func byKind(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []string
	for _, k := range keys {
		b = append(b, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(b, " ")
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func (s *stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	total := 0
	for _, n := range s.faults {
		total += n
	}
	var sum time.Duration
	for _, d := range s.durations {
		sum += d
	}
	avg := time.Duration(0)
	if len(s.durations) > 0 {
		avg = sum / time.Duration(len(s.durations))
	}
	fmt.Fprintf(&b, "schedules: %d (%s each on average, longest %s; clusters replaced: %d)\n", s.schedules, avg.Round(time.Second), maxDuration(s.durations).Round(time.Second), s.recreated)
	fmt.Fprintf(&b, "faults injected: %d: %s\n", total, byKind(s.faults))
	fmt.Fprintf(&b, "faults not played (their target was not running): %s\n", byKind(s.skipped))
	fmt.Fprintf(&b, "settled after the heal: longest %s\n", maxDuration(s.toSteady).Round(100*time.Millisecond))
	fmt.Fprintf(&b, "writes: %d tried, %d WAIT-acknowledged, %d plain-acknowledged (%d after a WAIT that answered 0); plain lost: %d; WAIT-acknowledged exempt: %d\n",
		s.tried, s.waited, s.plain, s.waitZero, s.lostPlain, s.exempt)
	fmt.Fprintf(&b, "transitions: %s\n", byKind(s.transitions))
	fmt.Fprintf(&b, "violations: %s", byKind(s.violations))
	if s.smallest != "" {
		fmt.Fprintf(&b, "\nfailing schedules: %d; the smallest:\n%s", len(s.failing), s.smallest)
	}
	return b.String()
}
