package operatorsuite

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// TestTheStandbyTakesOverWhenTheLeadersNodeIsLost installs the chart as it ships (two
// operator replicas on different nodes, a budget, a journal each) and stops the node of the
// leading replica, which also runs the primary of a replicated cluster: the leader and the
// primary are lost at once, so the failover has to start during the hand-over. The standby
// takes the lease, fails the cluster over (writes acknowledged by every replica survive),
// labels its pod for the journal Service, and its journal, backfilled from status.history,
// tells the failover through kubectl valkey history --full.
func TestTheStandbyTakesOverWhenTheLeadersNodeIsLost(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const opNS, release = "vo-ha", "valkey-operator"
	// Shorter leader election than the chart's default (15s lease), to keep the test short;
	// the hand-over works the same.
	helm(t, "install", release, "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "retryInterval=1s",
		"--set", "leaderElectionTiming.leaseDuration=6s", "--set", "leaderElectionTiming.renewDeadline=4s", "--set", "leaderElectionTiming.retryPeriod=1s",
		"--set", "crds.enabled=false", "--wait", "--timeout", "3m")
	t.Cleanup(func() {
		helm(t, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m")
	})
	ctx := ctxFor(t, 6*time.Minute)
	var ops corev1.PodList
	if err := k.List(ctx, &ops, client.InNamespace(opNS), client.MatchingLabels{"app.kubernetes.io/name": "valkey-operator"}); err != nil {
		t.Fatal(err)
	}
	if len(ops.Items) != 2 || ops.Items[0].Spec.NodeName == ops.Items[1].Spec.NodeName {
		t.Fatalf("want two operator pods on two nodes: %v", podNodes(ops.Items))
	}
	leader := waitLeader(t, ctx, opNS, "")
	leaderNode := ""
	for _, p := range ops.Items {
		if p.Name == leader {
			leaderNode = p.Spec.NodeName
		}
	}
	if err := k.Get(ctx, client.ObjectKey{Namespace: opNS, Name: release}, &policyv1.PodDisruptionBudget{}); err != nil {
		t.Errorf("no PodDisruptionBudget for the operator: %v", err)
	}

	ns := cl.Namespace(t)
	if err := k.Create(ctx, newCluster(ns, "ha", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "ha", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	// The primary on the leader's node.
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	onLeaderNode := ""
	for _, p := range pods.Items {
		if p.Spec.NodeName == leaderNode {
			onLeaderNode = p.Name
		}
	}
	if onLeaderNode == "" {
		t.Fatalf("no Valkey pod on the leader's node %s: %v", leaderNode, podNodes(pods.Items))
	}
	if vc.Status.Primary != onLeaderNode {
		annotate(t, ctx, ns, "ha", v1beta1.AnnotationSwitchoverTo, onLeaderNode)
		vc = waitFor(t, ns, "ha", time.Minute, "switched over to "+onLeaderNode, func(vc *v1alpha1.ValkeyCluster) bool {
			return vc.Status.Primary == onLeaderNode && steadyWith(3)(vc)
		})
	}
	c := writable(t, vc)
	const n = 100
	if err := setAndWait(ctx, c, "ha-", n, 2); err != nil {
		t.Fatal(err)
	}

	stopped := time.Now()
	if err := cl.StopNode(ctx, leaderNode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), leaderNode) })
	standby := waitLeader(t, ctx, opNS, leader)
	t.Logf("%s took the lease %s after the node stopped", standby, time.Since(stopped).Round(100*time.Millisecond))
	vc = waitFor(t, ns, "ha", 2*time.Minute, "failed over by the new leader", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary != "" && vc.Status.Primary != onLeaderNode
	})
	t.Logf("failed over to %s %s after the node stopped", vc.Status.Primary, time.Since(stopped).Round(100*time.Millisecond))
	checkHistoryChains(t, vc)
	failedOver := false
	for _, h := range vc.Status.History {
		failedOver = failedOver || (h.From == v1alpha1.StateFailingOver && h.To == v1alpha1.StateSteady)
	}
	if !failedOver {
		t.Fatalf("no failover in history:\n%s", summary(vc))
	}
	c2 := writable(t, vc)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("ha-%d", i)
		if v, err := c2.Do(ctx, c2.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("%s, acknowledged by every replica, lost: %q, %v", key, v, err)
		}
	}

	// The new leader labelled its pod; the journal Service follows it, and its journal tells
	// the failover (journaled, or backfilled from status.history).
	var newLeader corev1.Pod
	if err := k.Get(ctx, client.ObjectKey{Namespace: opNS, Name: standby}, &newLeader); err != nil || newLeader.Labels[manager.LabelLeader] != "true" {
		t.Fatalf("the new leader's pod is not labelled %s: %v %v", manager.LabelLeader, newLeader.Labels, err)
	}
	pointJournalServiceAtPod(t, opNS, release+"-journal", map[string]string{"app.kubernetes.io/name": "valkey-operator", manager.LabelLeader: "true"})
	out, err := exec.Command(pluginBinary(t), "history", "ha", "-n", ns, "--full", "--kubeconfig", cl.KubeconfigPath()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "FailingOver -> Steady") {
		t.Fatalf("kubectl valkey history --full from the new leader: %v\n%s", err, out)
	}
}

// waitLeader waits until the operator's Lease names a holder other than not, and returns its
// pod name (controller-runtime's identity is "<hostname>_<uuid>", a pod's hostname its name).
func waitLeader(t *testing.T, ctx context.Context, ns, not string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		lease, err := cl.Clientset().CoordinationV1().Leases(ns).Get(ctx, "valkey-operator.valkey.fsm.dev", metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil {
			if name, _, ok := strings.Cut(*lease.Spec.HolderIdentity, "_"); ok && name != not {
				return name
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader other than %q within 90s: %v", not, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func podNodes(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}
