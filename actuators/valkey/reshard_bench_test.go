package valkey

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The resharding benchmarks: 3 → 4 primaries holding BENCH_RESHARD_KEYS keys (2,000,000 by
// default) of 64 bytes, on real valkey-server processes on loopback, each way on a fresh
// cluster loaded with the same keys, measured in the same run:
//
//   - classic (Valkey 8.0): the operator's migration actuator (Pool.MigrateSlots, classic
//     path) carrying out the machine's plan (machine.PlanSlotMoves, every move at once as the
//     operator runs them), against valkey-cli --cluster rebalance --cluster-use-empty-primaries;
//   - atomic (Valkey 9.1): the same actuator on its Atomic Slot Migration path, against CLUSTER
//     MIGRATESLOTS issued by hand on every source at once.
//
// Each reports keys/s of both, their ratio (goals: classic ≥ 3× valkey-cli, atomic ≥ 0.8× raw),
// and what a cluster client saw meanwhile: p99 latency of its GET/SET and its errors. The
// cluster has no replicas: the figures are the migration's own, not replication's.

// benchAdmin is a user of the benchmark's own for valkey-cli (the operator's user has only the
// commands the operator sends).
const benchAdmin = "benchadmin"

func benchKeys(b *testing.B) int {
	if v := os.Getenv("BENCH_RESHARD_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("BENCH_RESHARD_KEYS=%q: %v", v, err)
		}
		return n
	}
	return 2_000_000
}

// benchCluster is three primaries serving SlotPlan(3) and a fourth joined with no slots.
type benchCluster struct {
	nodes []*server
	p     *Pool
	keys  int
	// atomic is set on Valkey 9.x clusters: waiting also watches the migration jobs.
	atomic bool
}

func newBenchCluster(b testing.TB, bin string, subnet, keys int) *benchCluster {
	b.Helper()
	c := &benchCluster{p: newTestPool(b), keys: keys}
	for i := 1; i <= 4; i++ {
		ip := fmt.Sprintf("127.79.%d.%d", subnet, i)
		c.nodes = append(c.nodes, startClusterServerWith(b, ip, bin, fmt.Sprintf("user %s on >%s ~* &* +@all\n", benchAdmin, testPasswords.Operator)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range c.nodes[1:] {
		if err := c.p.Meet(ctx, s.ip, survey(b, c.p, s).RunID, c.nodes[0].ip); err != nil {
			b.Fatal(err)
		}
	}
	for i, r := range machine.SlotPlan(3) {
		s := c.nodes[i]
		if err := c.p.AssignSlots(ctx, s.ip, survey(b, c.p, s).RunID, []machine.SlotRange{r}); err != nil {
			b.Fatal(err)
		}
	}
	eventually(b, "every node sees every slot served", func() bool {
		for _, s := range c.nodes {
			if v, err := c.p.Survey(ctx, s.ip); err != nil || v.SlotsSeen != machine.NumSlots || !v.ClusterOK {
				return false
			}
		}
		return true
	})
	for _, s := range c.nodes {
		if err := c.p.OpenWrites(ctx, s.ip, survey(b, c.p, s).RunID); err != nil {
			b.Fatal(err)
		}
	}
	epochsParted(b, ctx, c.p, c.ips()...)
	c.load(b)
	return c
}

// ips are the nodes' addresses, in order.
func (c *benchCluster) ips() []string {
	var out []string
	for _, s := range c.nodes {
		out = append(out, s.ip)
	}
	return out
}

// client is a cluster-aware application client (valkey-go's cluster client).
func (c *benchCluster) client(b testing.TB) vk.Client {
	b.Helper()
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(c.nodes[0].ip)}, Password: testPasswords.Client, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// load writes keys bench:0 … bench:<keys-1>, 64-byte values, pipelined.
func (c *benchCluster) load(b testing.TB) {
	b.Helper()
	cl := c.client(b)
	defer cl.Close()
	value := strings.Repeat("v", 64)
	const batch = 5000
	for i := 0; i < c.keys; i += batch {
		cmds := make(vk.Commands, 0, batch)
		for k := i; k < min(i+batch, c.keys); k++ {
			cmds = append(cmds, cl.B().Set().Key("bench:"+strconv.Itoa(k)).Value(value).Build())
		}
		for _, r := range cl.DoMulti(context.Background(), cmds...) {
			if err := r.Error(); err != nil {
				b.Fatalf("loading: %v", err)
			}
		}
	}
}

// owned reads each node's own slots, by node index.
func (c *benchCluster) owned(b testing.TB) map[int][]machine.SlotRange {
	b.Helper()
	out := map[int][]machine.SlotRange{}
	for i, s := range c.nodes {
		v, err := c.p.ClusterNodes(context.Background(), s.ip)
		if err != nil {
			b.Fatal(err)
		}
		me, _ := v.Myself()
		out[i] = me.Slots
	}
	return out
}

// newNodeKeys is how many keys the fourth node holds.
func (c *benchCluster) newNodeKeys(b testing.TB) int {
	b.Helper()
	return int(survey(b, c.p, c.nodes[3]).Keys)
}

// balanced reports whether the fourth node serves a quarter of the slots, as every node sees it,
// and no migration is open anywhere.
func (c *benchCluster) balanced(b testing.TB) bool {
	for _, s := range c.nodes {
		v, err := c.p.ClusterNodes(context.Background(), s.ip)
		if err != nil {
			return false
		}
		for _, n := range v.Nodes {
			if n.IP == c.nodes[3].ip && machine.SlotCount(n.Slots) != machine.NumSlots/4 {
				return false
			}
		}
		if v.OpenSlots() > 0 {
			return false
		}
	}
	return true
}

// clientLoad is a cluster client reading and writing random keys during a move.
type clientLoad struct {
	stop      chan struct{}
	done      sync.WaitGroup
	latencies []time.Duration
	errors    int
	firstErr  error
}

func (c *benchCluster) startClientLoad(b testing.TB) *clientLoad {
	l := &clientLoad{stop: make(chan struct{})}
	cl := c.client(b)
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		defer cl.Close()
		value := strings.Repeat("w", 64)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			key := "bench:" + strconv.Itoa(rand.IntN(c.keys))
			cmd := cl.B().Get().Key(key).Build()
			if i%2 == 1 {
				cmd = cl.B().Set().Key(key).Value(value).Build()
			}
			start := time.Now()
			err := cl.Do(context.Background(), cmd).Error()
			l.latencies = append(l.latencies, time.Since(start))
			if err != nil && !vk.IsValkeyNil(err) {
				l.errors++
				if l.firstErr == nil {
					l.firstErr = err
				}
			}
		}
	}()
	return l
}

// end stops the client and returns its p99 latency.
func (l *clientLoad) end() time.Duration {
	close(l.stop)
	l.done.Wait()
	if len(l.latencies) == 0 {
		return 0
	}
	slices.Sort(l.latencies)
	return l.latencies[len(l.latencies)*99/100]
}

// reshardFigures is one way of moving the slots, measured.
type reshardFigures struct {
	took   time.Duration
	keys   int
	p99    time.Duration
	errors int
}

func (f reshardFigures) keysPerSecond() float64 { return float64(f.keys) / f.took.Seconds() }

// measure loads a fresh cluster, runs move with a client working meanwhile, and checks that
// the fourth node serves its quarter with no slot left open and that every key is still there.
func measure(b *testing.B, bin string, subnet, keys int, move func(c *benchCluster)) reshardFigures {
	b.Helper()
	c := newBenchCluster(b, bin, subnet, keys)
	c.atomic = bin != ""
	defer c.stopAll()
	load := c.startClientLoad(b)
	start := time.Now()
	move(c)
	took := time.Since(start)
	p99 := load.end()
	if load.firstErr != nil {
		b.Logf("client errors: %d, the first: %v", load.errors, load.firstErr)
	}
	total := 0
	for _, s := range c.nodes {
		total += int(survey(b, c.p, s).Keys)
	}
	if total != keys {
		b.Fatalf("%d keys after the move, want %d", total, keys)
	}
	return reshardFigures{took: took, keys: c.newNodeKeys(b), p99: p99, errors: load.errors}
}

func (c *benchCluster) stopAll() {
	for _, s := range c.nodes {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		_ = os.RemoveAll(s.dir)
	}
}

// waitBalanced polls (20 ms) until the move is over, as seen by every node.
func (c *benchCluster) waitBalanced(b testing.TB) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for !c.balanced(b) {
		if c.atomic {
			if msg := c.failedMigration(); msg != "" {
				b.Fatalf("an atomic slot migration failed: %s", msg)
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("not balanced after 10 minutes: %v", c.owned(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// operatorMoves carries out the machine's plan with the operator's actuator, every move at
// once, call after call (each bounded by the operator's budget), until nothing is left.
func (c *benchCluster) operatorMoves(b *testing.B, asm bool) {
	b.Helper()
	ctx := context.Background()
	primaries := c.ips()
	for {
		moves := machine.PlanSlotMoves(c.owned(b), 4)
		if len(moves) == 0 {
			break
		}
		var wg sync.WaitGroup
		errs := make([]error, len(moves))
		running := false
		var mu sync.Mutex
		for i, m := range moves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := c.p.MigrateSlots(ctx, c.nodes[m.From].ip, "", c.nodes[m.To].ip, m.SlotRange, primaries, asm, testPasswords.Operator, 15*time.Second)
				errs[i] = err
				mu.Lock()
				running = running || res.Running
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		if running {
			time.Sleep(20 * time.Millisecond) // the operator observes again before deciding
		}
	}
	c.waitBalanced(b)
}

// cliRebalance is the reference for the classic path.
func (c *benchCluster) cliRebalance(b *testing.B) {
	b.Helper()
	cmd := exec.Command("valkey-cli", "--user", benchAdmin, "--pass", testPasswords.Operator, "--no-auth-warning",
		"--cluster", "rebalance", Addr(c.nodes[0].ip), "--cluster-use-empty-primaries")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("valkey-cli --cluster rebalance: %v\n%s", err, out)
	}
	c.waitBalanced(b)
}

// rawMigrateSlots is the reference for the atomic path: the same plan's ranges, one CLUSTER
// MIGRATESLOTS per source, all at once.
func (c *benchCluster) rawMigrateSlots(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	newID := ""
	if err := c.p.run(ctx, Addr(c.nodes[3].ip), func(ctx context.Context, cl vk.Client) (err error) {
		newID, err = cl.Do(ctx, cl.B().ClusterMyid().Build()).ToString()
		return err
	}); err != nil {
		b.Fatal(err)
	}
	bySource := map[int][]string{}
	for _, m := range machine.PlanSlotMoves(c.owned(b), 4) {
		bySource[m.From] = append(bySource[m.From], strconv.Itoa(m.Start), strconv.Itoa(m.End))
	}
	// The source authenticates on the target as the replication user (masteruser), which needs
	// the slot import's rules: granted as a user doing this by hand would have to.
	for _, s := range c.nodes {
		if err := c.p.run(ctx, Addr(s.ip), func(ctx context.Context, cl vk.Client) error {
			return cl.Do(ctx, cl.B().AclSetuser().Username(UserReplication).Rule(strings.Fields(asmReplicationCommands)...).Build()).Error()
		}); err != nil {
			b.Fatal(err)
		}
	}
	for from, ranges := range bySource {
		args := append(append([]string{"MIGRATESLOTS", "SLOTSRANGE"}, ranges...), "NODE", newID)
		admin, err := vk.NewClient(vk.ClientOption{InitAddress: []string{Addr(c.nodes[from].ip)}, Username: benchAdmin, Password: testPasswords.Operator, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		err = admin.Do(ctx, admin.B().Arbitrary("CLUSTER").Args(args...).Build()).Error()
		admin.Close()
		if err != nil {
			b.Fatalf("CLUSTER MIGRATESLOTS on %s: %v", c.nodes[from].ip, err)
		}
	}
	c.waitBalanced(b)
}

// failedMigration is the message of an Atomic Slot Migration job that failed on any node, "" if
// none did.
func (c *benchCluster) failedMigration() string {
	for _, s := range c.nodes {
		var jobs []map[string]string
		_ = c.p.run(context.Background(), Addr(s.ip), func(ctx context.Context, cl vk.Client) (err error) {
			jobs, err = slotMigrations(ctx, cl)
			return err
		})
		for _, j := range jobs {
			if j["state"] == "failed" {
				return fmt.Sprintf("%s: %s", s.ip, j["message"])
			}
		}
	}
	return ""
}

func reportReshard(b *testing.B, ours, ref []reshardFigures) {
	median := func(fs []reshardFigures, f func(reshardFigures) float64) float64 {
		v := make([]float64, len(fs))
		for i, x := range fs {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	kps := func(f reshardFigures) float64 { return f.keysPerSecond() }
	b.ReportMetric(median(ours, kps), "keys/s")
	b.ReportMetric(median(ref, kps), "ref-keys/s")
	b.ReportMetric(median(ours, kps)/median(ref, kps), "x-ref")
	b.ReportMetric(median(ours, func(f reshardFigures) float64 { return float64(f.keys) }), "keys-moved")
	b.ReportMetric(median(ours, func(f reshardFigures) float64 { return f.took.Seconds() }), "s")
	b.ReportMetric(median(ref, func(f reshardFigures) float64 { return f.took.Seconds() }), "ref-s")
	b.ReportMetric(median(ours, func(f reshardFigures) float64 { return float64(f.p99.Microseconds()) / 1000 }), "client-p99-ms")
	b.ReportMetric(median(ref, func(f reshardFigures) float64 { return float64(f.p99.Microseconds()) / 1000 }), "ref-client-p99-ms")
	b.ReportMetric(median(ours, func(f reshardFigures) float64 { return float64(f.errors) }), "client-errors")
	b.ReportMetric(median(ref, func(f reshardFigures) float64 { return float64(f.errors) }), "ref-client-errors")
}

// BenchmarkReshardClassic: the classic path (Valkey 8.0) against valkey-cli --cluster rebalance.
func BenchmarkReshardClassic(b *testing.B) {
	keys := benchKeys(b)
	var ours, ref []reshardFigures
	for i := 0; i < b.N; i++ {
		ours = append(ours, measure(b, "", 1, keys, func(c *benchCluster) { c.operatorMoves(b, false) }))
		ref = append(ref, measure(b, "", 2, keys, func(c *benchCluster) { c.cliRebalance(b) }))
	}
	reportReshard(b, ours, ref)
}

// BenchmarkReshardAtomic: the Atomic Slot Migration path (Valkey 9.1) against CLUSTER
// MIGRATESLOTS issued by hand.
func BenchmarkReshardAtomic(b *testing.B) {
	keys := benchKeys(b)
	bin := valkeyBinaries(b)["9.1"]
	var ours, ref []reshardFigures
	for i := 0; i < b.N; i++ {
		ours = append(ours, measure(b, bin, 3, keys, func(c *benchCluster) { c.operatorMoves(b, true) }))
		ref = append(ref, measure(b, bin, 4, keys, func(c *benchCluster) { c.rawMigrateSlots(b) }))
	}
	reportReshard(b, ours, ref)
}
