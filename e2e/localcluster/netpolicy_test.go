package localcluster_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// npValkeyPod is a Valkey server bound to its Pod IP, port 6379 named "valkey".
func npValkeyPod(name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{
				Name:  "valkey",
				Image: "valkey/valkey:8.0",
				Args:  []string{"--bind", "$(POD_IP)", "--port", "6379", "--protected-mode", "no", "--save", ""},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
				}}},
				Ports: []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}},
				// The probe talks to the Pod's own address from inside the Pod: an isolated
				// Pod must keep reaching itself.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
						Command: []string{"sh", "-c", `valkey-cli -h "$POD_IP" ping | grep -q PONG`},
					}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

func TestNetworkPolicyIngressIsEnforced(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	cs := cl.Clientset()
	pods := map[string]*corev1.Pod{}
	for name, lbls := range map[string]map[string]string{
		"server":  {"app": "np-server"},
		"allowed": {"role": "client"},
		"denied":  {"role": "stranger"},
	} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, npValkeyPod(name, lbls), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"server", "allowed", "denied"} {
		p, err := cl.WaitPodReady(ctx, ns, name, 60*time.Second)
		if err != nil {
			t.Fatalf("%v (last seen: %s)", err, podSummary(p))
		}
		pods[name] = p
	}
	server := pods["server"].Status.PodIP
	t.Cleanup(func() {
		if t.Failed() {
			rules, err := cl.NetworkPolicyRules()
			t.Logf("NetworkPolicy rules (%v):\n%s", err, rules)
		}
	})

	// ping runs valkey-cli inside a Pod (in its network namespace, sending from its address)
	// against addr:6379; refused tells a reset from anything else.
	ping := func(from, addr string) (ok, refused bool, out string) {
		start := time.Now()
		b, err := cl.Exec(ctx, ns, from, "valkey", "timeout", "5", "valkey-cli", "-h", addr, "-p", "6379", "ping")
		out = fmt.Sprintf("%v: %s (after %s)", err, strings.TrimSpace(string(b)), time.Since(start).Round(time.Millisecond))
		return strings.Contains(string(b), "PONG"), strings.Contains(string(b), "Connection refused"), out
	}
	// hostPing dials from the test process, optionally from a bound source address.
	hostPing := func(source string) error {
		d := net.Dialer{Timeout: 3 * time.Second}
		if source != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(source)}
		}
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(server, "6379"))
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "+PONG") {
			return fmt.Errorf("unexpected answer %q", line)
		}
		return nil
	}
	mustReach := func(from, what string) {
		t.Helper()
		if ok, _, out := ping(from, server); !ok {
			t.Fatalf("%s: %s does not reach the server: %s", what, from, out)
		}
	}
	mustBeRefused := func(from, what string) {
		t.Helper()
		start := time.Now()
		ok, refused, out := ping(from, server)
		if ok || !refused {
			t.Fatalf("%s: %s was not refused by the server: %s", what, from, out)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s: the refusal of %s took %s: a reset must come at once", what, from, d)
		}
	}
	waitRules := func() {
		t.Helper()
		if err := cl.WaitNetworkPolicies(ctx); err != nil {
			t.Fatal(err)
		}
	}
	relabel := func(name, role string) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{"role":%q}}}`, role)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRules()
	}

	mustReach("allowed", "without a policy")
	mustReach("denied", "without a policy")

	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "server-from-clients"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "np-server"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("valkey"))}},
			}},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules()
	mustReach("allowed", "with the policy")
	mustBeRefused("denied", "with the policy")
	// The node (the test process) is always admitted, from the host's address on the Pods'
	// network or another of the host's loopback addresses.
	if err := hostPing(""); err != nil {
		t.Fatalf("the test process no longer reaches the isolated server: %v", err)
	}
	if err := hostPing("127.0.0.3"); err != nil {
		t.Fatalf("the test process bound to 127.0.0.3 no longer reaches the isolated server: %v", err)
	}
	// The isolated server still opens connections of its own (egress is not enforced, and
	// the answers to them pass), and still reaches itself (its readiness probe).
	if ok, _, out := ping("server", pods["denied"].Status.PodIP); !ok {
		t.Fatalf("the isolated server cannot reach the denied pod: %s", out)
	}
	if ok, _, out := ping("server", server); !ok {
		t.Fatalf("the isolated server cannot reach itself: %s", out)
	}

	relabel("denied", "client")
	mustReach("denied", "relabelled as a client")
	relabel("denied", "stranger")
	mustBeRefused("denied", "relabelled back")

	// A restarted container gets a new process in the same Pod group: still judged alike.
	if err := cl.KillContainer(ns, "allowed", "valkey"); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "allowed", 60*time.Second, "restarted and ready", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 && podReady(p)
	})
	waitRules()
	mustReach("allowed", "after a restart")

	// The server re-created under its name gets its address back and a new network namespace,
	// isolated as before (the rules by address are the same; TestRulesAreInForceNamespaceByNamespace
	// checks that an equal document does not pass for rules loaded in the new namespace).
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "server", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the deleted server pod did not go: %v", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, npValkeyPod("server", map[string]string{"app": "np-server"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cl.WaitPodReady(ctx, ns, "server", 60*time.Second)
	if err != nil {
		t.Fatalf("%v (last seen: %s)", err, podSummary(p))
	}
	if p.Status.PodIP != server {
		t.Fatalf("the re-created server is at %s, not its old address %s: this case needs the address back", p.Status.PodIP, server)
	}
	waitRules()
	mustBeRefused("denied", "the server re-created on its address")
	mustReach("allowed", "the server re-created on its address")

	if err := cs.NetworkingV1().NetworkPolicies(ns).Delete(ctx, policy.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules()
	mustReach("denied", "once the policy is deleted")
	mustReach("allowed", "once the policy is deleted")
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{}); err != nil || !podReady(p) {
		t.Fatalf("the server lost its readiness while isolated: %v %s", err, podSummary(p))
	}
}

// A policy in another namespace selects from there with a namespaceSelector; the host's view
// of a refused connection is instant.
func TestNetworkPolicyNamespaceSelector(t *testing.T) {
	ns := cl.Namespace(t)
	other := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	cs := cl.Clientset()
	for _, c := range []struct{ ns, name string }{{ns, "server"}, {other, "client"}} {
		lbls := map[string]string{"app": c.name}
		if _, err := cs.CoreV1().Pods(c.ns).Create(ctx, npValkeyPod(c.name, lbls), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := cl.WaitPodReady(ctx, ns, "server", 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.WaitPodReady(ctx, other, "client", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "from-team"},
		Spec: networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}}},
			}},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ping := func() (bool, string) {
		b, err := cl.Exec(ctx, other, "client", "valkey", "timeout", "5", "valkey-cli", "-h", srv.Status.PodIP, "ping")
		return strings.Contains(string(b), "PONG"), fmt.Sprintf("%v: %s", err, b)
	}
	if err := cl.WaitNetworkPolicies(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, out := ping(); ok {
		t.Fatalf("a pod of an unlabelled namespace got through: %s", out)
	}
	patch := `{"metadata":{"labels":{"team":"blue"}}}`
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, other, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitNetworkPolicies(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, out := ping(); !ok {
		rules, _ := cl.NetworkPolicyRules()
		t.Fatalf("a pod of the labelled namespace is refused: %s\n%s", out, rules)
	}
}
