package chaos

import (
	"context"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// Schedules TestChaos found failing, written out step by step so that they fail (or pass)
// every time instead of once in a long run.

// TestFailoverPastANodeRestartedFromAnUnknownHistory: the lost primary's shard has a node
// that restarted from a snapshot of a replication history the recorded lineage cannot place.
// The machine means to trust such a node "by offset" (lineage.go: "A node on its own whose
// history the lineage cannot place at all is trusted by offset too"), and to promote the
// replica that holds the shard's history. It does not: Valkey reports "no previous history"
// as master_replid2 0000000000000000000000000000000000000000 (second_repl_offset -1); the
// survey passes that on verbatim, and the machine records it as a real history ID (the
// record of every bootstrap reads PrevID 000...0, PrevEnd -1). Every node restarted from its
// data reports that null ID as its replid2, so the lineage counts it as *continuing* the
// shard's history; no candidate's data covers it, elect answers "candidates' histories
// forked" and the failover never happens: the cluster stays Steady with a dead, fenced
// primary and takes no writes at all, for as long as nothing else changes.
//
// TestChaos found it on the Cache profile, whose replicas keep the RDB of every full sync on
// their volume (repl-diskless-load is off), so that a restart loads a stale snapshot: schedule
// 10 of -rapid.seed=13450779375844555913 -rapid.checks=10 (kill the primary, pause the new
// one, kill it), after nine Cache schedules of failovers on the same cluster had moved the
// shard's history past that snapshot. Here the unknown history is made directly: the
// snapshot comes from another cluster.
//
// The steps: take an RDB snapshot from a replica of a second Cache cluster; in the cluster
// under test, cut replica X from the operator (so that it is not re-attached), put the
// snapshot on X's volume and SIGKILL X (it restarts from it, fenced, following nothing);
// SIGKILL the primary (the operator waits: X is unseen); heal. Expected: a failover to the
// third node, which holds the shard's history, and Steady within 60 s.
func TestFailoverPastANodeRestartedFromAnUnknownHistory(t *testing.T) {
	h, step := newRegression(t)
	foreign, err := h.ensureNamed("foreign", v1alpha1.ProfileCache)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := h.ensure(v1alpha1.ProfileCache)
	if err != nil {
		t.Fatal(err)
	}
	name := vc.Name
	step("snapshot: wipe a replica of %s so that it full-syncs, and read its dump.rdb", foreign.Name)
	src := podName(foreign, 0)
	if foreign.Status.Primary == src {
		src = podName(foreign, 1)
	}
	for i := 0; i < 20; i++ {
		_ = h.probeWrite(foreign)
	}
	if _, err := h.apply(foreign.Name, v1alpha1.ProfileCache, emptyRestart(src, foreign)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.waitHealthy(foreign.Name, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	snapshot, err := cl.Exec(ctxT(t, 30*time.Second), h.ns, src, valkeyContainer, "base64", "-w0", "/data/dump.rdb")
	if err != nil || len(snapshot) == 0 {
		t.Fatalf("reading the snapshot of %s: %v %s", src, err, snapshot)
	}

	step("write through %s's client Service for 3s (its history must end up longer than the snapshot's)", name)
	w := startWriter(mustClientAddr(t, h, vc), h.clientIP, mustSecret(t, h, vc), "regression", nil)
	defer w.finish()
	time.Sleep(3 * time.Second)
	x := podName(vc, 2)
	if vc.Status.Primary == x {
		x = podName(vc, 1)
	}
	xIP, err := h.podIP(x)
	if err != nil {
		t.Fatal(err)
	}
	step("cut %s from the operator, put %s's snapshot on its volume, SIGKILL it", x, src)
	if err := cl.Partition(xIP, h.opIP); err != nil {
		t.Fatal(err)
	}
	if out, err := cl.Exec(ctxT(t, 30*time.Second), h.ns, x, valkeyContainer, "sh", "-c", "echo "+string(snapshot)+" | base64 -d > /data/dump.rdb"); err != nil {
		t.Fatalf("writing the snapshot to %s: %v %s", x, err, out)
	}
	oldPID, _ := cl.ContainerPID(h.ns, x, valkeyContainer)
	if err := cl.KillContainer(h.ns, x, valkeyContainer); err != nil {
		t.Fatal(err)
	}
	if err := h.waitRestarted(x, oldPID, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if vc, err = h.get(name); err != nil {
		t.Fatal(err)
	}
	primary := vc.Status.Primary
	step("SIGKILL the primary %s, wait 5s, heal", primary)
	if err := cl.KillContainer(h.ns, primary, valkeyContainer); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	h.heal()
	step("the nodes after the heal:\n%s", h.nodesReport(vc))
	vc, after, vs := h.settle(name, time.Now(), w)
	if len(vs) > 0 {
		t.Fatalf("BUG: no failover within %s of the heal; the operator waits with \"no failover: candidates' histories forked\" "+
			"(see the [operator] \"waiting\" lines in .cache/logs/chaos.log):\n%v", after.Round(time.Second), vs)
	}
	step("failed over to %s, Steady %s after the heal", vc.Status.Primary, after.Round(100*time.Millisecond))
	if vc.Status.Primary == x {
		t.Fatalf("%s, restarted from another cluster's snapshot, was promoted over the replica that holds the shard's history", x)
	}
	_, _, lost := h.checkWrites(vc, w, nil)
	if len(lost) > 0 {
		t.Fatalf("%v", lost)
	}
	step("writes: %s", w.summary())
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := ctxFor(d)
	t.Cleanup(cancel)
	return ctx
}

func emptyRestart(pod string, vc *v1alpha1.ValkeyCluster) step {
	s := step{}
	s.Kind = sim.FaultEmptyRestart
	for i := 0; i < pods; i++ {
		if podName(vc, i) == pod {
			s.Node.Ordinal = i
		}
	}
	return s
}

// switchover asks for a planned switchover to pod (as kubectl valkey failover does) and waits
// until it is the primary of a healthy cluster.
func (h *harness) switchover(name, pod string) (*v1alpha1.ValkeyCluster, error) {
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1beta1.AnnotationSwitchoverTo, pod)
	if err := k.Patch(ctx, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if vc, err := h.get(name); err == nil && vc.Status.Primary == pod && steady(vc) {
			return h.waitHealthy(name, time.Until(deadline))
		}
		time.Sleep(200 * time.Millisecond)
	}
	vc, _ := h.get(name)
	return nil, fmt.Errorf("switchover to %s not done within 60s:\n%s", pod, summary(vc))
}

// waitRestarted waits until the pod's valkey container runs another process than oldPID.
func (h *harness) waitRestarted(pod string, oldPID int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pid, err := cl.ContainerPID(h.ns, pod, valkeyContainer); err == nil && pid != oldPID {
			time.Sleep(time.Second) // loaded its data, reported running
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not running again within %s", pod, timeout)
}

func mustClientAddr(t *testing.T, h *harness, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	addr, err := h.clientAddr(vc)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func mustSecret(t *testing.T, h *harness, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		t.Fatal(err)
	}
	return pass
}

// TestDataSurvivesOnTheOneNodeThatKeptIt: a Durable node restarted from its volume holds its
// data, but Valkey (8.0, append-only file with an RDB preamble) does not restore the
// replication ID and offset from it: it reports a fresh ID at offset 0, like an empty node
// ("Partial resynchronization not possible (no cached primary)"). The simulator modelled a
// restart from a volume as keeping both, and the machine trusted that: a node at offset 0
// was empty to it. When the only node that still held the data was such a node, the
// machine reseeded on "the node holding the most data" by offset, all offsets 0, the lowest
// ordinal: an empty node, and the node with the data full-synced from it. Fixed: the survey
// reports key counts, a node is empty only at offset 0 with no keys, and the simulator
// restarts Durable nodes as Valkey does (see machine/lineage.go).
//
// TestChaos found it as `node-down n1 for 9s; empty-restart primary; empty-restart n2;
// empty-restart n2` (Durable): 20585 keys, among them 136 WAIT-acknowledged writes of the
// schedule, flushed from durable-1-1 ("Full resync from primary: …:0", "Flushing old data").
// Two volumes lost is a double failure, and WAIT 1 promises one; but the third node kept
// everything and the operator threw it away (the simulator's empty-sync-source).
//
// The steps: write keys with WAIT 2 (on all three nodes); power off the node of the replica
// with the highest ordinal; wipe the volumes of the two other pods; power the node on.
// Expected: the keys survive (the replica that kept them is the one to promote).
func TestDataSurvivesOnTheOneNodeThatKeptIt(t *testing.T) {
	h, step := newRegression(t)
	vc, err := h.ensure(v1alpha1.ProfileDurable)
	if err != nil {
		t.Fatal(err)
	}
	name := vc.Name
	keeper := ""
	for i := pods - 1; i >= 0 && keeper == ""; i-- {
		if p := podName(vc, i); p != vc.Status.Primary {
			keeper = p
		}
	}
	node := ""
	var list corev1.PodList
	if err := k.List(ctxT(t, 10*time.Second), &list, client.InNamespace(h.ns), client.MatchingLabels(kube.SelectorLabels(valkeyapi.HubOf(vc)))); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Name == keeper {
			node = p.Spec.NodeName
		}
	}
	for _, p := range list.Items {
		if p.Name != keeper && p.Spec.NodeName == node {
			t.Fatalf("%s shares node %s with %s: the pods are not spread", p.Name, node, keeper)
		}
	}
	var keys []string
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("kept-%d", i)
		if _, err := h.writeCanary(vc, key); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	step("wrote %d keys with WAIT 2: every node has them", len(keys))
	step("power off %s (pod %s); wipe the volumes of the two other pods", node, keeper)
	if err := cl.StopNode(ctxT(t, 30*time.Second), node); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.stopped[node] = true
	h.mu.Unlock()
	for i := 0; i < pods; i++ {
		if p := podName(vc, i); p != keeper {
			if _, err := h.apply(name, v1alpha1.ProfileDurable, emptyRestart(p, vc)); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(5 * time.Second)
	// Cut the keeper from the operator while it comes back, to count its keys before the
	// operator acts on it.
	keeperIP, err := h.podIP(keeper)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Partition(keeperIP, h.opIP); err != nil {
		t.Fatal(err)
	}
	step("power %s on, %s cut from the operator for now", node, keeper)
	if err := cl.StartNode(ctxT(t, 30*time.Second), node); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	delete(h.stopped, node)
	h.mu.Unlock()
	held, err := h.dbsize(vc, keeper, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	step("%s restarted from its append-only file holding %d keys; the nodes:\n%s", keeper, held, h.nodesReport(vc))
	if held < int64(len(keys)) {
		t.Fatalf("%s came back with %d keys, fewer than the %d written with WAIT 2: the premise of the test does not hold", keeper, held, len(keys))
	}
	step("heal: the operator sees %s", keeper)
	h.heal()
	w := startWriter(mustClientAddr(t, h, vc), h.clientIP, mustSecret(t, h, vc), "after", nil)
	defer w.finish()
	vc, after, vs := h.settle(name, time.Now(), w)
	if len(vs) > 0 {
		t.Fatalf("not settled within %s: %v", after.Round(time.Second), vs)
	}
	if gone := missingKeys(t, h, vc, keys); len(gone) > 0 {
		t.Fatalf("BUG: %d of %d keys that %s kept are gone: the operator promoted %s and made %s full-sync from it (see its \"Flushing old data\" in .cache/logs/chaos.log):\n%s",
			len(gone), len(keys), keeper, vc.Status.Primary, keeper, summary(vc))
	}
	step("the keys survived; primary %s", vc.Status.Primary)
}

// dbsize asks a pod (as the operator's user) how many keys it holds, once it answers and has
// loaded its data.
func (h *harness) dbsize(vc *v1alpha1.ValkeyCluster, pod string, timeout time.Duration) (int64, error) {
	pass, err := h.secret(vc, kube.KeyOperatorPassword)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(timeout)
	for {
		ip, err := h.podIP(pod)
		if err == nil {
			var c *resp.Conn
			if c, err = resp.Dial(ip.String()+":6379", netip.Addr{}, "operator", pass, 2*time.Second); err == nil {
				var v any
				v, err = c.Do(2*time.Second, "DBSIZE")
				_ = c.Close()
				if n, ok := v.(int64); ok && err == nil {
					return n, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("DBSIZE of %s: %v", pod, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWAITAcknowledgedWritesSurviveARestartOfEveryPod: every pod of a Durable cluster
// restarts at once (a power cut, a botched node upgrade) with its volume intact. Each comes back
// from its append-only file with its data, but at offset 0 under a fresh replication ID (see
// TestDataSurvivesOnTheOneNodeThatKeptIt), so offsets cannot tell which holds the most; the
// machine used to reseed on the lowest ordinal, and writes acknowledged by WAIT 1 on the
// primary and the other replica, but not on that one, were gone. Now the last primary,
// restarted from its own append-only file, is known to hold every write (it took them all).
//
// The steps: with n0 a replica, cut n0 from the primary (it falls behind); write keys with
// WAIT 1 (the other replica acknowledges them); SIGKILL every pod; heal. Expected: the keys
// are there.
func TestWAITAcknowledgedWritesSurviveARestartOfEveryPod(t *testing.T) {
	h, step := newRegression(t)
	vc, err := h.ensure(v1alpha1.ProfileDurable)
	if err != nil {
		t.Fatal(err)
	}
	name := vc.Name
	lagger := podName(vc, 0)
	if vc.Status.Primary == lagger {
		step("switchover to %s, so that %s is a replica", podName(vc, 1), lagger)
		if vc, err = h.switchover(name, podName(vc, 1)); err != nil {
			t.Fatal(err)
		}
	}
	primary := vc.Status.Primary
	lagIP, err := h.podIP(lagger)
	if err != nil {
		t.Fatal(err)
	}
	primaryIP, err := h.podIP(primary)
	if err != nil {
		t.Fatal(err)
	}
	step("cut %s from the primary %s", lagger, primary)
	if err := cl.Partition(lagIP, primaryIP); err != nil {
		t.Fatal(err)
	}
	addr, pass := mustClientAddr(t, h, vc), mustSecret(t, h, vc)
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("acked-%d", i)
		if _, err := c.Do(2*time.Second, "SET", key, key); err != nil {
			t.Fatal(err)
		}
		n, err := c.Do(5*time.Second, "WAIT", "1", "3000")
		if got, _ := n.(int64); err != nil || got < 1 {
			t.Fatalf("WAIT 1 for %s: %v %v", key, n, err)
		}
		keys = append(keys, key)
	}
	_ = c.Close()
	step("wrote %d keys, each acknowledged by WAIT 1", len(keys))
	step("SIGKILL every pod, heal the partition")
	for i := 0; i < pods; i++ {
		if err := cl.KillContainer(h.ns, podName(vc, i), valkeyContainer); err != nil {
			t.Fatal(err)
		}
	}
	h.heal()
	w := startWriter(addr, h.clientIP, pass, "after", nil)
	defer w.finish()
	vc, after, vs := h.settle(name, time.Now(), w)
	if len(vs) > 0 {
		t.Fatalf("not settled within %s: %v", after.Round(time.Second), vs)
	}
	if gone := missingKeys(t, h, vc, keys); len(gone) > 0 {
		t.Fatalf("BUG: %d of %d WAIT-acknowledged keys are gone after every pod restarted with its volume; the new primary is %s:\n%s",
			len(gone), len(keys), vc.Status.Primary, summary(vc))
	}
	step("the keys survived; primary %s", vc.Status.Primary)
}

// newRegression opens a regression test: real processes (skipped with -short), the shared
// harness, and step, which says what the test does next in its log and the suite's.
func newRegression(t *testing.T) (*harness, func(format string, args ...any)) {
	t.Helper()
	if testing.Short() {
		t.Skip("real processes")
	}
	h := newHarness(t)
	return h, func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		h.logf("regression: %s", msg)
		t.Log(msg)
	}
}

// TestOperatorCutOffFromThePrimaryDoesNotFailOver: the operator loses the primary, but the
// replicas still hear from it (the primary pings them every second). That is a partition of the
// operator, not a lost primary: failing over would cut a serving primary off its replicas for
// nothing. The steps: cut the primary from the operator for 8 s (well past the 3 s detection
// window) while a client writes through the client Service; heal. Expected: no primary-lost
// in history, the same primary, writes accepted throughout the cut.
func TestOperatorCutOffFromThePrimaryDoesNotFailOver(t *testing.T) {
	h, step := newRegression(t)
	vc, err := h.ensure(v1alpha1.ProfileDurable)
	if err != nil {
		t.Fatal(err)
	}
	primary, seq := vc.Status.Primary, int64(0)
	for _, r := range vc.Status.History {
		seq = max(seq, r.Seq)
	}
	ip, err := h.podIP(primary)
	if err != nil {
		t.Fatal(err)
	}
	w := startWriter(mustClientAddr(t, h, vc), h.clientIP, mustSecret(t, h, vc), "cut", nil)
	step("cut the primary %s from the operator for 8s", primary)
	if err := cl.Partition(ip, h.opIP); err != nil {
		t.Fatal(err)
	}
	before := w.acked()
	time.Sleep(8 * time.Second)
	acked := w.acked() - before
	h.heal()
	w.finish()
	if vc, err = h.get(vc.Name); err != nil {
		t.Fatal(err)
	}
	for _, r := range vc.Status.History {
		if r.Seq > seq && r.Event == "primary-lost" {
			t.Fatalf("the operator failed over though the replicas heard the primary: %s\n%s", r.Message, summary(vc))
		}
	}
	if vc.Status.Primary != primary {
		t.Fatalf("primary moved from %s to %s", primary, vc.Status.Primary)
	}
	if acked == 0 {
		t.Fatal("no write was acknowledged during the cut: the test's client did not reach the primary")
	}
	step("no failover; %d writes acknowledged during the cut", acked)
}

// missingKeys reads keys through the client Service and lists those that no longer hold their
// own name as value (as the regression tests write them).
func missingKeys(t *testing.T, h *harness, vc *v1alpha1.ValkeyCluster, keys []string) []string {
	t.Helper()
	values := map[string]any{}
	if err := readKeys(mustClientAddr(t, h, vc), h.clientIP, mustSecret(t, h, vc), keys, values); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, key := range keys {
		if values[key] != key {
			gone = append(gone, key)
		}
	}
	return gone
}
