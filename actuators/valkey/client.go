package valkey

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// Options say how the operator reaches nodes.
type Options struct {
	// Password is the operator user's password.
	Password string
	// SourceIP, when set, is the local address connections come from (the operator Pod's
	// IP): partitions and network policies then see the operator for who it is.
	SourceIP netip.Addr
	// Timeout bounds every dial and command (default 2 s): an unreachable node must cost
	// one timeout per survey, not stall the reconcile loop.
	Timeout time.Duration
}

// LocalAddr is the local address of connections to the nodes (nil: the system's choice).
func (o Options) LocalAddr() net.Addr {
	if !o.SourceIP.IsValid() {
		return nil
	}
	return &net.TCPAddr{IP: o.SourceIP.AsSlice()}
}

// Pool keeps one client per node address and is safe for concurrent use.
type Pool struct {
	opts    Options
	mu      sync.Mutex
	clients map[string]vk.Client
	// tlsBase and routes: see tls.go.
	tlsBase *tls.Config
	routes  map[string]string
	// quorum is min-replicas-to-write as the operator runs the cluster ("": unknown).
	quorum string
	// sentinel: the cluster runs the Sentinel topology (replicapriority.go).
	sentinel bool
}

// SetWriteQuorum is min-replicas-to-write as the operator runs the cluster: what an action that
// lifts it for a moment puts back.
func (p *Pool) SetWriteQuorum(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quorum = strconv.Itoa(n)
}

func (p *Pool) writeQuorum() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quorum
}

// NewPool makes an empty pool.
func NewPool(opts Options) *Pool {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	return &Pool{opts: opts, clients: map[string]vk.Client{}, routes: map[string]string{}}
}

// client returns the client of addr, dialling it when there is none. The dial happens outside
// the pool's lock: a node that does not answer must not hold up the surveys of the others (it
// did: every survey of a round waited for a blackholed primary's dial timeout, and with the
// round's deadline the replicas were counted unreachable too).
func (p *Pool) client(addr string) (vk.Client, error) {
	p.mu.Lock()
	c, ok := p.clients[addr]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := p.dial(addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if other, ok := p.clients[addr]; ok {
		c.Close()
		return other, nil
	}
	p.clients[addr] = c
	return c, nil
}

// connBuffer is the read and write buffer of each connection to a node, and ringScale the
// log2 of its ring of commands in flight (more wait for a free slot; they are not refused).
const (
	connBuffer = 4 << 10
	ringScale  = 5
)

func (p *Pool) dial(addr string) (vk.Client, error) {
	d := net.Dialer{Timeout: p.opts.Timeout, LocalAddr: p.opts.LocalAddr()}
	o := vk.ClientOption{
		InitAddress:       []string{addr},
		Username:          UserOperator,
		Password:          p.opts.Password,
		Dialer:            d,
		DisableCache:      true,
		DisableRetry:      true,
		ConnWriteTimeout:  p.opts.Timeout,
		BlockingPoolSize:  1,
		ForceSingleClient: true,
		// The operator sends a few small commands per node and turn, not a stream, and
		// rarely more than a handful at once (a survey, a turn's actions): valkey-go's
		// defaults (0.5 MiB read and write buffers and a ring of 1024 per connection) cost
		// about 2 MiB of the operator's memory per node, most of what 50 clusters cost, and
		// with 16 KiB buffers and a ring of 256 the ring and buffers were still 40 % of the
		// live heap (BenchmarkManyClusters' heap profile). Larger replies and payloads
		// (INFO, CLUSTER NODES of a big cluster, a RESTORE) pass through in several reads
		// and writes.
		ReadBufferEachConn:  connBuffer,
		WriteBufferEachConn: connBuffer,
		RingScaleEachConn:   ringScale,
	}
	p.tlsOption(addr, &o)
	c, err := vk.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	return c, nil
}

// Forget closes and drops the client of addr (a pod that went away, or whose connection
// failed: the next use dials afresh).
func (p *Pool) Forget(addr string) {
	p.mu.Lock()
	c, ok := p.clients[addr]
	delete(p.clients, addr)
	p.mu.Unlock()
	if ok {
		c.Close()
	}
}

// Retain forgets every client whose address is not in keep.
func (p *Pool) Retain(keep map[string]bool) {
	p.mu.Lock()
	var drop []vk.Client
	for addr, c := range p.clients {
		if !keep[addr] {
			drop = append(drop, c)
			delete(p.clients, addr)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

// Close closes every client.
func (p *Pool) Close() { p.Retain(nil) }

// run gives f a client for addr and a context bounded by the pool's timeout. A connection
// that broke since its last use (the node restarted, the pod moved) is dialled again once;
// a timeout is not retried, so that an unreachable node costs one timeout, not two.
func (p *Pool) run(ctx context.Context, addr string, f func(ctx context.Context, c vk.Client) error) error {
	return p.runFor(ctx, addr, p.opts.Timeout, f)
}

// commandsPerTimeout is how many pipelined commands of a bulk action (one per hash slot) one
// pool timeout is allowed for: a node answers thousands a second even when busy, and a
// deadline that does not grow with the work fails a whole-cluster action on a loaded node
// every time it is retried.
const commandsPerTimeout = 2048

// bulkTimeout is the deadline of an action that pipelines commands commands.
func (p *Pool) bulkTimeout(commands int) time.Duration {
	return p.opts.Timeout * time.Duration(1+commands/commandsPerTimeout)
}

// runFor is run with a deadline of its own (bulkTimeout for a bulk action).
func (p *Pool) runFor(ctx context.Context, addr string, timeout time.Duration, f func(ctx context.Context, c vk.Client) error) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var c vk.Client
		c, err = p.client(addr)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err = f(cctx, c)
		cancel()
		if err == nil {
			return nil
		}
		if _, isReply := vk.IsValkeyErr(err); isReply {
			break
		}
		p.Forget(addr)
		var ne net.Error
		if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
			break
		}
	}
	return fmt.Errorf("%s: %w", addr, err)
}
