package operatorsuite

import (
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAHibernatedClusterWakesWithEveryAcknowledgedWrite: a writer WAIT-acknowledges keys
// through the client Service; kubectl valkey hibernate stops every pod (status Hibernated, the
// StatefulSet at zero, the claims and the auth Secret kept, Ready False for that reason);
// kubectl valkey wake brings the pods back on their claims, the cluster reaches Steady, and
// every acknowledged key reads back through another client. The history records both.
func TestAHibernatedClusterWakesWithEveryAcknowledgedWrite(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 8*time.Minute)
	const name = "sleepy"
	if err := k.Create(ctx, newCluster(ns, name, v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, name, 3*time.Minute, "Steady with 3 ready", steadyWith(3))
	// The primary moves off ordinal 0 first: the replicas then hold as many keys as it does,
	// and only the record of the stop makes the wake start from it again.
	first := vc.Status.Primary
	kubectlValkey(t, "failover", name, "-n", ns)
	vc = waitFor(t, ns, name, 2*time.Minute, "Steady on another primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary != first && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	primaryAtStop := vc.Status.Primary
	w := startAckedWriter(ctx, writable(t, vc), "sleepy")
	for deadline := time.Now().Add(20 * time.Second); w.acked.Load() < 200 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}

	out := kubectlValkey(t, "hibernate", name, "-n", ns)
	if !strings.Contains(out, "hibernation of sleepy requested") {
		t.Fatalf("kubectl valkey hibernate:\n%s", out)
	}
	vc = waitFor(t, ns, name, 3*time.Minute, "Hibernated with no pod", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateHibernated && podCount(t, ns, name) == 0
	})
	w.stopWriting()
	acked := w.acked.Load()
	if acked < 100 {
		t.Fatalf("only %d writes acknowledged before the hibernation", acked)
	}
	var sts appsv1.StatefulSet
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &sts); err != nil {
		t.Fatal(err)
	}
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 0 || sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Fatalf("the hibernated StatefulSet asks for %v pods, whenScaled %s", sts.Spec.Replicas, sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled)
	}
	var claims corev1.PersistentVolumeClaimList
	if err := k.List(ctx, &claims, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 3 {
		t.Fatalf("%d claims kept by the hibernation, want 3", len(claims.Items))
	}
	if _, err := cl.Clientset().CoreV1().Secrets(ns).Get(ctx, kube.NamesOf(valkeyapi.HubOf(vc)).Auth, metav1.GetOptions{}); err != nil {
		t.Fatalf("the auth Secret is gone: %v", err)
	}
	ready := condition(vc, v1beta1.ConditionReady)
	if ready == nil || ready.Status != "False" || ready.Reason != "Hibernated" {
		t.Fatalf("Ready while hibernated: %+v", ready)
	}
	// It stays so: no pod comes back, no transition happens.
	seq := len(vc.Status.History)
	time.Sleep(3 * time.Second)
	if vc = get(t, ns, name); vc.Status.State != v1alpha1.StateHibernated || len(vc.Status.History) != seq || podCount(t, ns, name) != 0 {
		t.Fatalf("the hibernated cluster moved:\n%s", summary(vc))
	}

	out = kubectlValkey(t, "wake", name, "-n", ns)
	if !strings.Contains(out, "wake of sleepy requested") {
		t.Fatalf("kubectl valkey wake:\n%s", out)
	}
	vc = waitFor(t, ns, name, 4*time.Minute, "Steady with 3 ready after the wake", steadyWith(3))
	checkReplication(t, vc, 2)
	checkHistoryChains(t, vc)
	var events []string
	for _, h := range vc.Status.History {
		events = append(events, h.Event)
	}
	joined := strings.Join(events, " ")
	if !strings.Contains(joined, "hibernate-requested") || !strings.Contains(joined, "hibernate-caught-up") || !strings.Contains(joined, "wake-requested") {
		t.Fatalf("the history does not record the hibernation and the wake: %s", joined)
	}
	if vc.Status.Primary != primaryAtStop || !historyHas(vc, primaryAtStop+" ") || !historyHas(vc, "elected to wake from") {
		t.Fatalf("woken on %s, not on %s, the primary when the pods stopped:\n%s", vc.Status.Primary, primaryAtStop, summary(vc))
	}
	reader := writable(t, vc)
	n, lost := w.check(ctx, t, reader)
	if len(lost) > 0 {
		t.Fatalf("%d of %d WAIT-acknowledged writes lost across the hibernation, e.g. %v:\n%s", len(lost), n, lost[:min(5, len(lost))], summary(vc))
	}
	t.Logf("hibernated and woken: %d WAIT-acknowledged writes, every one read back; history: %s", n, joined)
}

// TestAHibernatedClusterTopologyWakesWholeWithEveryAcknowledgedWrite: the same with three
// shards of two pods on Valkey 9.1 (the simulator models no persistent cluster mode, so this is
// where a Cluster topology's hibernation is proven): every pod stops, and after the wake
// valkey-cli --cluster check finds every slot served by the shard that served it before and
// every acknowledged key reads back through another cluster client.
func TestAHibernatedClusterTopologyWakesWholeWithEveryAcknowledgedWrite(t *testing.T) {
	const name = "dormant"
	ns, ctx, vc := steadyShards(t, name, 3, 2, "valkey/valkey:9.1", 8*time.Minute)
	before := map[int]string{}
	for i, sh := range vc.Status.Shards {
		before[i] = sh.Slots
	}
	w := startAckedWriter(ctx, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)), "dormant")
	for deadline := time.Now().Add(20 * time.Second); w.acked.Load() < 300 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}
	vc.Spec.Hibernate = true
	update(t, ctx, vc)
	waitFor(t, ns, name, 3*time.Minute, "Hibernated with no pod", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateHibernated && podCount(t, ns, name) == 0
	})
	w.stopWriting()
	vc = get(t, ns, name)
	vc.Spec.Hibernate = false
	update(t, ctx, vc)
	vc = waitFor(t, ns, name, 4*time.Minute, "Steady with 3 shards of 2 after the wake", steadyCluster(3, 2))
	clusterCheck(t, vc, vc.Status.Nodes[0].IP)
	for i, sh := range vc.Status.Shards {
		if sh.Slots != before[i] {
			t.Errorf("shard %d serves %s after the wake, %s before", i, sh.Slots, before[i])
		}
	}
	n, lost := w.check(ctx, t, clusterClient(t, clientServiceAddr(t, vc), password(t, vc)))
	if len(lost) > 0 {
		t.Fatalf("%d of %d WAIT-acknowledged writes lost across the hibernation, e.g. %v:\n%s", len(lost), n, lost[:min(5, len(lost))], summary(vc))
	}
	if n < 100 {
		t.Fatalf("only %d writes acknowledged before the hibernation", n)
	}
	t.Logf("3 shards hibernated and woken: %d WAIT-acknowledged writes, every one read back", n)
}

// historyHas reports whether a message of the cluster's history contains text.
func historyHas(vc *v1alpha1.ValkeyCluster, text string) bool {
	for _, h := range vc.Status.History {
		if strings.Contains(h.Message, text) {
			return true
		}
	}
	return false
}

// podCount is how many pods of the cluster exist.
func podCount(t *testing.T, ns, name string) int {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: name}); err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// condition finds a condition of the cluster's status.
func condition(vc *v1alpha1.ValkeyCluster, typ string) *struct{ Status, Reason, Message string } {
	for _, c := range vc.Status.Conditions {
		if c.Type == typ {
			return &struct{ Status, Reason, Message string }{string(c.Status), c.Reason, c.Message}
		}
	}
	return nil
}
