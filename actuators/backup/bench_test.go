package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// BenchmarkBackupThroughput: a 64 MB data set (65,536 random 1 kB values) on a real Valkey 8.0
// node, backed up to versitygw by Take (streamed, no copy on disk) and by the reference a CronJob
// backup would run: `valkey-cli --rdb <file>` (the same SYNC, written to a file), then the file
// uploaded with the same transfer manager settings. Runs alternate, five each; the figures are
// medians: MB/s, the ratio to the reference (goal >= 1), and a writer's p99 latency (SET every
// 2 ms through the application user) while each backup streams.
func BenchmarkBackupThroughput(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchBackup(b)
	}
}

func benchBackup(b *testing.B) {
	if _, err := exec.LookPath("valkey-cli"); err != nil {
		b.Skip("valkey-cli is not installed (make valkey)")
	}
	store := startStore(b, "127.77.9.5")
	ip := "127.77.10.3"
	startValkey(b, "", ip, b.TempDir(), "")
	ctx := context.Background()
	fill(b, ip, 65536)
	src := Source{Addr: valkey.Addr(ip), User: valkey.UserReplication, Password: passwords.Replication}
	type run struct {
		mbps, p99ms float64
	}
	var ours, ref []run
	tmp := b.TempDir()
	for r := 0; r < 5; r++ {
		stop, p99 := writer(b, ip)
		start := time.Now()
		res, err := Take(ctx, src, store, fmt.Sprintf("ours-%d.rdb", r))
		took := time.Since(start)
		stop()
		if err != nil {
			b.Fatal(err)
		}
		ours = append(ours, run{float64(res.Size) / 1e6 / took.Seconds(), p99()})

		stop, p99 = writer(b, ip)
		start = time.Now()
		size := referenceBackup(b, ip, store, filepath.Join(tmp, "ref.rdb"), fmt.Sprintf("ref-%d.rdb", r))
		took = time.Since(start)
		stop()
		ref = append(ref, run{float64(size) / 1e6 / took.Seconds(), p99()})
	}
	median := func(rs []run, f func(run) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	mbps := func(r run) float64 { return r.mbps }
	lat := func(r run) float64 { return r.p99ms }
	b.ReportMetric(median(ours, mbps), "MB/s")
	b.ReportMetric(median(ref, mbps), "ref-MB/s")
	b.ReportMetric(median(ours, mbps)/median(ref, mbps), "x-ref")
	b.ReportMetric(median(ours, lat), "writer-p99-ms")
	b.ReportMetric(median(ref, lat), "ref-writer-p99-ms")
}

// referenceBackup is what a CronJob backup does: valkey-cli --rdb into a file, then the file
// uploaded. It returns the file's size.
func referenceBackup(b *testing.B, ip string, store Store, file, name string) int64 {
	b.Helper()
	cmd := exec.Command("valkey-cli", "-h", ip, "-p", strconv.Itoa(valkey.Port), "--user", valkey.UserReplication, "--pass", passwords.Replication, "--no-auth-warning", "--rdb", file)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("valkey-cli --rdb: %v\n%s", err, out)
	}
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if _, err := store.uploader().UploadObject(context.Background(), &tm.UploadObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(name)), Body: f}); err != nil {
		b.Fatal(err)
	}
	return st.Size()
}

// writer SETs a key every 2 ms until stopped; p99 is the 99th percentile of its latencies (ms).
func writer(b *testing.B, ip string) (stop func(), p99 func() float64) {
	c := client(b, ip, valkey.UserClient, passwords.Client)
	done := make(chan struct{})
	result := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				result <- lat
				return
			case <-tick.C:
				start := time.Now()
				_ = c.Do(context.Background(), c.B().Set().Key("writer").Value(start.String()).Build()).Error()
				lat = append(lat, time.Since(start))
			}
		}
	}()
	var lats []time.Duration
	return func() { close(done); lats = <-result }, func() float64 {
		if len(lats) == 0 {
			return 0
		}
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		return float64(lats[len(lats)*99/100].Microseconds()) / 1000
	}
}

// BenchmarkRestoreTime: the same 64 MB data set backed up once, then loaded back, three times
// each, alternating: by Load into a running node (verify the object, then serve it to the node
// as a full sync: the object is read twice) and by the reference a user would run by hand:
// download the object to a file and start a new valkey-server on it, timed until it answers with
// every key loaded. Medians in seconds, and the ratio (below 1 is faster than the reference).
func BenchmarkRestoreTime(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRestore(b)
	}
}

func benchRestore(b *testing.B) {
	const keys = 65536
	store, res := restoreBenchSnapshot(b, "127.77.9.8", "127.77.10.4", keys)
	ctx := context.Background()
	target := "127.77.10.5"
	startValkey(b, "", target, b.TempDir(), "")
	var ours, ref []float64
	for r := 0; r < 3; r++ {
		start := time.Now()
		if err := Load(ctx, Target{Addr: valkey.Addr(target), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}, "127.77.10.6", store, "restore.rdb", res); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(start).Seconds())
		if n := dbsize(b, target); n != keys {
			b.Fatalf("the loaded node holds %d keys, want %d", n, keys)
		}

		ref = append(ref, referenceRestore(b, store, fmt.Sprintf("127.77.10.%d", 10+r), keys))
	}
	sort.Float64s(ours)
	sort.Float64s(ref)
	b.ReportMetric(ours[1], "restore-s")
	b.ReportMetric(ref[1], "ref-restore-s")
	b.ReportMetric(ours[1]/ref[1], "x-ref-time")
	b.ReportMetric(float64(res.Size)/1e6, "MB")
}

// BenchmarkClusterRestoreTime: the same 64 MB data set as BenchmarkRestoreTime loaded, three
// times, into a cluster-mode node serving every slot by LoadByRestore (key by key: verify the
// object, then stream it through RESTORE), against the same reference (download, start a new
// valkey-server on the file). Medians in seconds, and the ratio to the reference.
func BenchmarkClusterRestoreTime(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchClusterRestore(b)
	}
}

func benchClusterRestore(b *testing.B) {
	const keys = 65536
	store, res := restoreBenchSnapshot(b, "127.77.9.9", "127.77.30.4", keys)
	ctx := context.Background()
	target := "127.77.30.5"
	startClusterNode(b, target, "")
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	if err := p.AllowRestore(ctx, target); err != nil {
		b.Fatal(err)
	}
	var ours, ref []float64
	for r := 0; r < 3; r++ {
		start := time.Now()
		if _, err := LoadByRestore(ctx, Target{Addr: valkey.Addr(target), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}, store, "restore.rdb", res, all); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(start).Seconds())
		if n := dbsize(b, target); n != keys {
			b.Fatalf("the loaded node holds %d keys, want %d", n, keys)
		}
		ref = append(ref, referenceRestore(b, store, fmt.Sprintf("127.77.30.%d", 10+r), keys))
	}
	sort.Float64s(ours)
	sort.Float64s(ref)
	b.ReportMetric(ours[1], "restore-s")
	b.ReportMetric(ref[1], "ref-restore-s")
	b.ReportMetric(ours[1]/ref[1], "x-ref-time")
	b.ReportMetric(float64(res.Size)/1e6, "MB")
}

// BenchmarkClusterRestoreMemory: what the operator allocates (runtime.MemStats.TotalAlloc, in
// all) per MiB of value when LoadByRestore loads a cluster-mode node, for one random value of
// 64 MiB (streamed to the node as it is read) and, as the reference, 65,536 random values of
// 1 kB (pipelined, each held while its RESTORE is sent): the streamed figure must stay far
// below a MiB, and the time (median of three loads each) near the pipelined one's.
func BenchmarkClusterRestoreMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchClusterRestoreMemory(b)
	}
}

func benchClusterRestoreMemory(b *testing.B) {
	const size = 64 << 20
	ctx := context.Background()
	store, small := restoreBenchSnapshot(b, "127.77.42.1", "127.77.42.2", size>>10)
	startValkey(b, "", "127.77.42.3", b.TempDir(), "")
	c := client(b, "127.77.42.3", valkey.UserClient, passwords.Client)
	value := make([]byte, size)
	_, _ = rand.Read(value)
	if err := c.Do(ctx, c.B().Set().Key("large").Value(vk.BinaryString(value)).Build()).Error(); err != nil {
		b.Fatal(err)
	}
	large, err := Take(ctx, Source{Addr: valkey.Addr("127.77.42.3"), User: valkey.UserReplication, Password: passwords.Replication}, store, "large.rdb")
	if err != nil {
		b.Fatal(err)
	}
	target := "127.77.42.4"
	startClusterNode(b, target, "")
	p := valkey.NewPool(valkey.Options{Password: passwords.Operator, Timeout: 2 * time.Second})
	defer p.Close()
	if err := p.AllowRestore(ctx, target); err != nil {
		b.Fatal(err)
	}
	all := []machine.SlotRange{{Start: 0, End: machine.NumSlots - 1}}
	load := func(name string, res Result) (perMiB, seconds float64) {
		var allocs, times []float64
		for r := 0; r < 3; r++ {
			start := time.Now()
			alloc := allocated(func() {
				if _, err := LoadByRestore(ctx, Target{Addr: valkey.Addr(target), User: valkey.UserOperator, Password: passwords.Operator, MasterUser: valkey.UserReplication, MasterPassword: passwords.Replication}, store, name, res, all); err != nil {
					b.Fatal(err)
				}
			})
			times = append(times, time.Since(start).Seconds())
			allocs = append(allocs, float64(alloc)/(size>>20))
		}
		sort.Float64s(allocs)
		sort.Float64s(times)
		return allocs[1], times[1]
	}
	streamed, streamedTime := load("large.rdb", large)
	pipelined, pipelinedTime := load("restore.rdb", small)
	b.ReportMetric(streamed, "B/MiB-streamed")
	b.ReportMetric(pipelined, "B/MiB-pipelined")
	b.ReportMetric(streamedTime, "streamed-s")
	b.ReportMetric(pipelinedTime, "pipelined-s")
}

// restoreBenchSnapshot starts a store at storeIP and a node at srcIP holding keys random 1 kB
// values, and backs the node up as restore.rdb: the data set the restore benchmarks load.
func restoreBenchSnapshot(b *testing.B, storeIP, srcIP string, keys int) (Store, Result) {
	store := startStore(b, storeIP)
	startValkey(b, "", srcIP, b.TempDir(), "")
	fill(b, srcIP, keys)
	res, err := Take(context.Background(), Source{Addr: valkey.Addr(srcIP), User: valkey.UserReplication, Password: passwords.Replication}, store, "restore.rdb")
	if err != nil {
		b.Fatal(err)
	}
	return store, res
}

// referenceRestore is what a user would run by hand: download the object to a file and start a
// new valkey-server (at refIP) on it, timed until it answers with every key loaded.
func referenceRestore(b *testing.B, store Store, refIP string, keys int64) float64 {
	start := time.Now()
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		b.Fatal(err)
	}
	if err := Fetch(context.Background(), store, "restore.rdb", Result{}, f); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	cmd := startValkey(b, "", refIP, dir, "dbfilename dump.rdb\n")
	for dbsize(b, refIP) != keys {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start).Seconds()
	_ = cmd.Process.Kill()
	return took
}

func dbsize(b *testing.B, ip string) int64 {
	c := client(b, ip, oracleUser, oraclePassword)
	n, err := c.Do(context.Background(), c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return -1
	}
	return n
}

// fill writes keys random 1 kB values through the application user.
func fill(b *testing.B, ip string, keys int) {
	c := client(b, ip, valkey.UserClient, passwords.Client)
	value := make([]byte, 1024)
	for i := 0; i < keys; i += 4096 {
		cmds := make(vk.Commands, 0, 4096)
		for k := i; k < min(i+4096, keys); k++ {
			_, _ = rand.Read(value)
			cmds = append(cmds, c.B().Set().Key("k:"+strconv.Itoa(k)).Value(string(value)).Build())
		}
		for _, r := range c.DoMulti(context.Background(), cmds...) {
			if err := r.Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
