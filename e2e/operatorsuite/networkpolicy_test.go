package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// clientPod is a pod to run valkey-cli in (its container is a Valkey server of its own, bound
// to its pod IP, only there to keep the pod running).
func clientPod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "cli", Image: "valkey/valkey:8.0",
				Args: []string{"--bind", "$(POD_IP)", "--port", "6379", "--save", ""},
				Env:  []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
			}},
		},
	}
}

// spec.networkPolicy, enforced by the local cluster's node agent (nftables, as a network plugin
// does): a pod the policy lists reaches every Valkey pod, one it does not list is refused on
// each; the cluster's own pods keep replicating (writes acknowledged by WAIT 2) and a failover
// (the primary's pod deleted) completes with the replicas following the new primary; listing
// the refused pod's label lets it in; disabling the policy deletes it. The operator runs on the
// node here (node traffic is always allowed, as Kubernetes specifies), so its rule is checked
// by the policy's content, the rest by connections.
func TestANetworkPolicyLetsInOnlyTheListedClients(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	vc := newCluster(ns, "guarded", v1alpha1.TopologyReplication, 3)
	vc.Spec.NetworkPolicy = v1alpha1.NetworkPolicySpec{Enabled: true, From: []networkingv1.NetworkPolicyPeer{
		{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "app"}}},
	}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	for name, role := range map[string]string{"app": "app", "stranger": "other"} {
		if err := k.Create(ctx, clientPod(ns, name, map[string]string{"role": role})); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"app", "stranger"} {
		if _, err := cl.WaitPodReady(ctx, ns, name, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	vc = waitFor(t, ns, "guarded", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	var np networkingv1.NetworkPolicy
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guarded"}, &np); err != nil {
		t.Fatalf("the NetworkPolicy: %v", err)
	}
	if op := np.Spec.Ingress[1].From[0]; op.PodSelector == nil || op.PodSelector.MatchLabels["app.kubernetes.io/name"] != "valkey-operator" || op.NamespaceSelector == nil {
		t.Errorf("the operator's rule: %+v", np.Spec.Ingress[1])
	}
	waitRules := func() {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := cl.WaitNetworkPolicies(wctx); err != nil {
			t.Fatal(err)
		}
	}
	waitRules()
	t.Cleanup(func() {
		if t.Failed() {
			rules, err := cl.NetworkPolicyRules()
			t.Logf("NetworkPolicy rules (%v):\n%s", err, rules)
		}
	})
	pass := password(t, vc)
	// ping runs valkey-cli in pod from against ip:6379 (as the application user).
	ping := func(from, ip string) (pong, refused bool, out string) {
		b, err := cl.Exec(ctx, ns, from, "cli", "timeout", "5", "valkey-cli", "--no-auth-warning", "-h", ip, "-p", "6379", "-a", pass, "ping")
		return strings.Contains(string(b), "PONG"), strings.Contains(string(b), "Connection refused"), fmt.Sprintf("%v: %s", err, strings.TrimSpace(string(b)))
	}
	reachesAll := func(from string, want bool, what string) {
		t.Helper()
		for _, n := range get(t, ns, "guarded").Status.Nodes {
			pong, refused, out := ping(from, n.IP)
			if want && !pong {
				t.Errorf("%s: %s does not reach %s: %s", what, from, n.Pod, out)
			}
			if !want && (pong || !refused) {
				t.Errorf("%s: %s is not refused by %s: %s", what, from, n.Pod, out)
			}
		}
	}
	reachesAll("app", true, "listed")
	reachesAll("stranger", false, "not listed")

	// The cluster's own pods replicate, and fail over.
	c := writable(t, vc)
	if err := setAndWait(ctx, c, "guarded:", 20, 2); err != nil {
		t.Fatalf("writes acknowledged by both replicas behind the policy: %v", err)
	}
	primary := ""
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRolePrimary {
			primary = n.Pod
		}
	}
	var old corev1.Pod
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: primary}, &old); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "guarded", 3*time.Minute, "Steady with 3 ready after the primary's pod was deleted", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary != primary
	})
	// The hand-over completes while the deleted pod still runs (its preStop hook); its
	// replacement starts fenced, and is let in once it follows the new primary. Until then a
	// client that reaches it is refused by the node, not by the policy: wait for the
	// replacement, and for the writes below to be acknowledged by it.
	waitReplaced(t, ctx, ns, primary, old.UID)
	waitRules()
	c = writable(t, vc)
	if err := setAndWait(ctx, c, "after-failover:", 20, 2); err != nil {
		t.Fatalf("writes acknowledged by both replicas after the failover: %v\n%s", err, summary(vc))
	}
	reachesAll("app", true, "listed, after the failover")
	reachesAll("stranger", false, "not listed, after the failover")

	// The stranger's label listed: let in.
	vc = get(t, ns, "guarded")
	vc.Spec.NetworkPolicy.From = append(vc.Spec.NetworkPolicy.From, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "other"}}})
	update(t, ctx, vc)
	waitPolicy(t, ctx, ns, "the second peer in the policy", func(np *networkingv1.NetworkPolicy) bool {
		return np != nil && len(np.Spec.Ingress) == 3 && len(np.Spec.Ingress[2].From) == 2
	})
	waitRules()
	reachesAll("stranger", true, "listed later")

	// Disabled: the policy goes, and with it the filter.
	vc = get(t, ns, "guarded")
	vc.Spec.NetworkPolicy = v1alpha1.NetworkPolicySpec{}
	update(t, ctx, vc)
	waitPolicy(t, ctx, ns, "the policy deleted", func(np *networkingv1.NetworkPolicy) bool { return np == nil })
	waitRules()
	reachesAll("stranger", true, "policy disabled")
}

// waitPolicy waits until the cluster's NetworkPolicy (nil: none) satisfies cond.
func waitPolicy(t *testing.T, ctx context.Context, ns, what string, cond func(*networkingv1.NetworkPolicy) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var np networkingv1.NetworkPolicy
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "guarded"}, &np)
		switch {
		case apierrors.IsNotFound(err):
			if cond(nil) {
				return
			}
		case err == nil:
			if cond(&np) {
				return
			}
		default:
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("NetworkPolicy: not %s: %+v", what, np.Spec)
		}
	}
}

// waitReplaced waits until the pod name is a pod other than uid, ready.
func waitReplaced(t *testing.T, ctx context.Context, ns, name string, uid types.UID) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var p corev1.Pod
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
		if err == nil && p.UID != uid && podReady(&p) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s was not replaced by a ready pod: %v", name, err)
		}
	}
}
