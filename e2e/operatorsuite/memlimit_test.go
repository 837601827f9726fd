package operatorsuite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc64"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// operatorMemoryLimit is the operator's memory limit in this test. Measured on a 2-core machine
// (the kernel's peak for the operator's cgroup, page cache included, under the whole load
// below): 25-31 MiB; the limit leaves it twice that. The same load with the cache as it was
// before strangers were stripped (every labelled ConfigMap held whole) peaked at 54 MiB with
// 3000 ConfigMaps and was OOM-killed with 5000. Under a 20Mi limit the operator still passes
// (peak 19.3 MiB: the Go runtime's soft limit, 90 % of the container's, makes the collector
// work harder instead); under 12Mi the kernel OOM-kills it and the test fails within seconds.
// Without the restore's structural check the cluster goes to Restoring with the crafted file
// and the test fails there.
const operatorMemoryLimit = "64Mi"

// The label flood: ConfigMaps carrying the cluster label that no ValkeyCluster owns, as
// anyone who may create ConfigMaps in a watched namespace can make.
const (
	floodCount = 5000
	floodBytes = 10 << 10
)

// TestTheOperatorStaysWithinItsMemoryLimitUnderHostileLoad: the operator, installed from the
// chart as a Pod under a memory limit the local kubelet enforces as a kubelet does, is handed
// at once a restore from a crafted backup (a string claiming 1 TiB, with a correct manifest,
// sha256 and RDB checksum), a flood of labelled ConfigMaps that are not its own, and a reader
// paging its whole journal through the API server in a loop. Each oracle is independent of
// the operator: the restore is refused with the reason in status and an Event; no
// valkey-server restarted (restart counts, INFO run_id); the kubelet never saw the operator
// OOM-killed or restarted; the kernel's peak for the operator's cgroup stays under the limit.
func TestTheOperatorStaysWithinItsMemoryLimitUnderHostileLoad(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	if !cl.MemoryLimitsEnforced() {
		t.Skip("this machine enforces no memory limits: the test would prove nothing")
	}
	const opNS, release = "vo-memory", "vo-memory"
	helm(t, "install", release, "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "retryInterval=1s", "--set", "replicas=1", "--set", "crds.enabled=false",
		"--set", "resources.requests.memory="+operatorMemoryLimit, "--set", "resources.limits.memory="+operatorMemoryLimit,
		"--wait", "--timeout", "3m")
	t.Cleanup(func() { helm(t, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m") })
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 4*time.Minute)
	pods, err := cl.Clientset().CoreV1().Pods(opNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want one operator pod, got %v, %v", pods, err)
	}
	opPod := pods.Items[0].Name
	limit := resource.MustParse(operatorMemoryLimit)
	checkGoMemoryLimitInput(t, opNS, opPod, limit.Value())

	flooded := make(chan error, 1)
	go func() { flooded <- floodConfigMaps(ctx, ns) }()
	spec, store := s3Store(t, ctx, ns)
	const crafted = "crafted/one-tib-string"
	putCraftedBackup(t, ctx, store, path.Join(ns, crafted))
	// Every wait also watches the operator: once it is OOM-killed it can finish nothing, and
	// the test says so rather than time out.
	alive := operatorAlive(t, opNS, opPod)
	vc := newCluster(ns, "mem", v1alpha1.TopologyReplication, 2)
	vc.Spec.Backup = &v1alpha1.BackupSpec{Store: spec}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "mem", 2*time.Minute, "Steady with 2 ready", func(vc *v1alpha1.ValkeyCluster) bool { return alive() && steadyWith(2)(vc) })

	pointJournalServiceAtPod(t, opNS, release+"-journal", nil)
	reader := startJournalReader(ns, "mem")
	defer reader.stop()

	runs := map[string]string{}
	restarts := valkeyRestarts(t, ctx, ns)
	for _, n := range vc.Status.Nodes {
		runs[n.Pod] = nodeInfo(t, vc, n.IP, "server")["run_id"]
	}
	if err := <-flooded; err != nil {
		t.Fatalf("creating the flood: %v", err)
	}
	alive()

	restoreInPlace(t, ctx, ns, "mem", v1beta1.RestoreSource{Store: hubStore(spec), Path: path.Join(ns, crafted)})
	const why = "a string claims 1099511627776 bytes"
	vc = waitFor(t, ns, "mem", 2*time.Minute, "refusing the crafted backup", func(vc *v1alpha1.ValkeyCluster) bool {
		if vc.Status.State == v1alpha1.StateRestoring {
			t.Fatalf("the crafted backup went to the nodes: %s", summary(vc))
		}
		return alive() && vc.Status.Restore != nil && vc.Status.Restore.Phase == "Refused"
	})
	if h := strings.Join(historyEvents(vc), "; "); strings.Contains(h, "Restoring") {
		t.Errorf("the cluster went through Restoring: %s", h)
	}
	if !strings.Contains(vc.Status.Restore.Reason, why) || vc.Status.State != v1alpha1.StateSteady {
		t.Errorf("refused with %q in state %s; want a reason with %q, Steady", vc.Status.Restore.Reason, vc.Status.State, why)
	}
	if note := eventNote(t, ctx, ns, "mem", "RestoreRefused"); !strings.Contains(note, why) {
		t.Errorf("the RestoreRefused Event says %q, want %q", note, why)
	}
	// The reader keeps paging while the operator holds the flood: two whole passes more.
	reader.waitPasses(t, 2, time.Minute, alive)
	reader.stop()

	if got := valkeyRestarts(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(restarts) {
		t.Errorf("valkey containers restarted: %v, before %v", got, restarts)
	}
	for _, n := range get(t, ns, "mem").Status.Nodes {
		if got := nodeInfo(t, vc, n.IP, "server")["run_id"]; got != runs[n.Pod] {
			t.Errorf("valkey-server of %s restarted: run_id %s, before %s", n.Pod, got, runs[n.Pod])
		}
	}
	op, err := cl.Clientset().CoreV1().Pods(opNS).Get(ctx, opPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := cl.ContainerMemory(opNS, opPod, "operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator under a %s limit: kernel's peak %.1f MiB (now %.1f MiB, limit reached %d times, OOM kills %d); journal of %d records read whole %d times (%d pages)",
		operatorMemoryLimit, mib(mem.Peak), mib(mem.Current), mem.LimitHits, mem.OOMKills, reader.records.Load(), reader.passes.Load(), reader.pages.Load())
	if cs := op.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 || cs[0].LastTerminationState.Terminated != nil {
		t.Errorf("the operator container restarted: %+v", cs)
	}
	if mem.OOMKills != 0 || mem.Limit != limit.Value() || mem.Peak >= mem.Limit {
		t.Errorf("the operator's cgroup: %+v; want its limit %d, a peak under it and no OOM kill", mem, limit.Value())
	}
	if err := reader.failure(); err != nil {
		t.Errorf("the journal reader: %v", err)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// operatorAlive returns a check, for wait conditions, that fails the test at once when the
// kubelet reports the operator's container restarted or the kernel counts an OOM kill in its
// cgroup; otherwise it returns true.
func operatorAlive(t *testing.T, ns, pod string) func() bool {
	return func() bool {
		t.Helper()
		if mem, err := cl.ContainerMemory(ns, pod, "operator"); err != nil || mem.OOMKills != 0 {
			t.Fatalf("the operator was OOM-killed: %+v (%v)", mem, err)
		}
		p, err := cl.Clientset().CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != 0 {
				t.Fatalf("the operator restarted: %d times, last %+v", c.RestartCount, c.LastTerminationState.Terminated)
			}
		}
		return true
	}
}

// checkGoMemoryLimitInput checks that the operator's process got its limit from the Downward
// API (CONTAINER_MEMORY_LIMIT), from which it sets the Go runtime's soft limit.
func checkGoMemoryLimitInput(t *testing.T, ns, pod string, want int64) {
	t.Helper()
	pid, err := cl.ContainerPID(ns, pod, "operator")
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(append(env, 0), []byte("\x00CONTAINER_MEMORY_LIMIT="+strconv.FormatInt(want, 10)+"\x00")) {
		t.Fatalf("the operator's environment does not carry its memory limit %d", want)
	}
}

// valkeyRestarts is every valkey container's restart count in ns, by pod.
func valkeyRestarts(t *testing.T, ctx context.Context, ns string) map[string]int32 {
	t.Helper()
	pods, err := cl.Clientset().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelCluster + "=mem"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			out[p.Name+"/"+c.Name] = c.RestartCount
		}
	}
	if len(out) == 0 {
		t.Fatal("no valkey pods")
	}
	return out
}

// floodConfigMaps creates floodCount ConfigMaps of floodBytes each in ns, labelled as a
// cluster's but owned by none, from 16 writers.
func floodConfigMaps(ctx context.Context, ns string) error {
	payload := strings.Repeat("x", floodBytes)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < floodCount; i += 16 {
				_, err := cl.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%04d", i), Labels: map[string]string{kube.LabelCluster: "flood"}},
					Data:       map[string]string{"payload": payload},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// putCraftedBackup stores at dir a backup whose one file is an RDB with a string claiming
// 1 TiB: header, the key, a 64-bit length of 2^40, the end opcode and a correct CRC-64, under a
// manifest with its right size and sha256. Nothing but reading the file's structure tells it
// from a real backup.
func putCraftedBackup(t *testing.T, ctx context.Context, store backup.Store, dir string) {
	t.Helper()
	rdb := append([]byte("REDIS0011"), 0, 1, 'k', 0x81)
	rdb = binary.BigEndian.AppendUint64(rdb, 1<<40)
	rdb = append(rdb, 0xff)
	// Valkey's CRC-64/Jones: hash/crc64 inverts before and after, Valkey does not.
	rdb = binary.LittleEndian.AppendUint64(rdb, ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), rdb))
	sum := sha256.Sum256(rdb)
	now := time.Now().UTC()
	m := backup.Manifest{Backup: path.Base(dir), Cluster: "crafted", Mode: machine.ModeReplication, Started: now, Completed: now,
		Shards: []backup.Shard{{Index: 0, Node: "crafted-0", File: "shard-0.rdb", Size: int64(len(rdb)), SHA256: hex.EncodeToString(sum[:]), RDBVersion: "0011"}}}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"shard-0.rdb": rdb, backup.ManifestName: manifest} {
		if _, err := store.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(store.Key(path.Join(dir, name))), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
}

// journalReader pages a cluster's whole journal, observations included, through the API
// server, asking for the largest pages the operator serves, again and again until stopped.
type journalReader struct {
	cancel         context.CancelFunc
	done           chan struct{}
	passes, pages  atomic.Int64
	records        atomic.Int64 // in the last whole pass
	mu             sync.Mutex
	err            error
	stopOnce       sync.Once
	namespace, vkc string
}

func startJournalReader(ns, name string) *journalReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &journalReader{cancel: cancel, done: make(chan struct{}), namespace: ns, vkc: name}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			if err := r.pass(ctx); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
				return
			}
		}
	}()
	return r
}

// pass reads the journal from its first record to its last.
func (r *journalReader) pass(ctx context.Context) error {
	next, records := "", 0
	for {
		req := cl.Clientset().Discovery().RESTClient().Get().
			AbsPath("/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/"+r.namespace+"/journals/"+r.vkc).Param("observations", "true")
		if next != "" {
			req = req.Param("continue", next)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return err
		}
		var page manager.JournalPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("page %s: %w", next, err)
		}
		r.pages.Add(1)
		records += len(page.Records)
		if next = page.Metadata.Continue; next == "" {
			break
		}
	}
	if records == 0 {
		return fmt.Errorf("the journal of %s/%s is empty", r.namespace, r.vkc)
	}
	r.records.Store(int64(records))
	r.passes.Add(1)
	return nil
}

// waitPasses waits until the reader has read the whole journal n more times.
func (r *journalReader) waitPasses(t *testing.T, n int64, timeout time.Duration, alive func() bool) {
	t.Helper()
	want := r.passes.Load() + n
	for deadline := time.Now().Add(timeout); r.passes.Load() < want; time.Sleep(100 * time.Millisecond) {
		alive()
		if err := r.failure(); err != nil {
			t.Fatalf("the journal reader: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal reader read %d passes, want %d within %s", r.passes.Load(), want, timeout)
		}
	}
}

func (r *journalReader) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *journalReader) stop() {
	r.stopOnce.Do(func() {
		r.cancel()
		<-r.done
	})
}
