package chaos

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/valkey-fsm/valkey-operator/internal/resp"
)

// writer is an application writing through the client Service all along a schedule, from its
// own source address. Every other write is followed by WAIT 1 on the same connection: it
// counts as WAIT-acknowledged only when WAIT answers >= 1 (a replica has it). The others, and
// the WAITs that answered 0, are plain acknowledged writes, which asynchronous replication may
// lose in a failover. A failed write is never retried under the same key: only what was
// acknowledged is remembered, and a key is written at most once.
type writer struct {
	addr string // the client Service ClusterIP:port
	// resolve, when set, names the address to (re)connect to instead of addr: in cluster mode
	// the primary serving the writer's slot, which a failover moves.
	resolve func() (string, error)
	from    netip.Addr
	pass    string
	prefix  string

	mu       sync.Mutex
	plain    map[string]time.Time // key -> when the SET was acknowledged
	waited   map[string]time.Time // key -> when WAIT confirmed a replica has it
	attempts int
	failures int
	waitZero int // WAITs that answered 0 (or timed out)
	errs     map[string]int

	stop chan struct{}
	done chan struct{}
}

const (
	writeTimeout = time.Second
	waitMillis   = 1000
)

func startWriter(addr string, from netip.Addr, pass, prefix string, resolve func() (string, error)) *writer {
	w := &writer{addr: addr, resolve: resolve, from: from, pass: pass, prefix: prefix,
		plain: map[string]time.Time{}, waited: map[string]time.Time{}, errs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	var c *resp.Conn
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	drop := func(err error) {
		w.mu.Lock()
		w.failures++
		w.errs[errClass(err)]++
		w.mu.Unlock()
		if c != nil {
			_ = c.Close()
			c = nil
		}
	}
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		if c == nil {
			addr := w.addr
			if w.resolve != nil {
				var err error
				if addr, err = w.resolve(); err != nil {
					drop(err)
					time.Sleep(40 * time.Millisecond)
					continue
				}
			}
			var err error
			if c, err = resp.Dial(addr, w.from, "", w.pass, writeTimeout); err != nil {
				c = nil
				drop(err)
				time.Sleep(40 * time.Millisecond)
				continue
			}
		}
		key := fmt.Sprintf("%s:%06d", w.prefix, i)
		w.mu.Lock()
		w.attempts++
		w.mu.Unlock()
		if _, err := c.Do(writeTimeout, "SET", key, key); err != nil {
			drop(err)
			continue
		}
		acked := time.Now()
		if i%2 == 0 {
			w.record(key, acked, false)
			continue
		}
		n, err := c.Do(writeTimeout+waitMillis*time.Millisecond, "WAIT", "1", fmt.Sprint(waitMillis))
		if err != nil {
			w.record(key, acked, false)
			drop(err)
			continue
		}
		if got, ok := n.(int64); ok && got >= 1 {
			w.record(key, time.Now(), true)
		} else {
			w.record(key, acked, false)
			w.mu.Lock()
			w.waitZero++
			w.mu.Unlock()
		}
	}
}

func (w *writer) record(key string, at time.Time, waited bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if waited {
		w.waited[key] = at
	} else {
		w.plain[key] = at
	}
}

// acked counts the writes acknowledged so far (plain and WAIT-acknowledged).
func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.plain) + len(w.waited)
}

// finish stops the writer and waits for it.
func (w *writer) finish() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// errClass shortens an error to its kind for the summary (timeouts, resets, NOREPLICAS...).
func errClass(err error) string {
	s := err.Error()
	if resp.IsReplyError(err) {
		if i := strings.IndexByte(s, ' '); i > 0 {
			return s[:i]
		}
		return s
	}
	switch {
	case strings.Contains(s, "timeout"):
		return "timeout"
	case strings.Contains(s, "reset"):
		return "reset"
	case strings.Contains(s, "refused"):
		return "refused"
	case strings.Contains(s, "EOF"):
		return "EOF"
	case strings.Contains(s, "AUTH"):
		return "auth"
	}
	return "other"
}

func (w *writer) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var kinds []string
	for k, n := range w.errs {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("%d writes tried, %d plain-acknowledged, %d WAIT-acknowledged, %d WAIT answered 0, %d failed %v",
		w.attempts, len(w.plain), len(w.waited), w.waitZero, w.failures, kinds)
}
