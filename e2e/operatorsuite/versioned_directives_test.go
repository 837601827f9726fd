package operatorsuite

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestValkey9DirectivesFollowTheReportedVersionAndThePrimaryStillHandsOver: two replication
// groups serving TLS, one on valkey/valkey:9.1 and one on 8.0. Every 9.1 node has
// shutdown-on-sigterm failover and tls-auto-reload-interval 60 (CONFIG GET, asked of the node
// itself); no 8.0 node has either (8.0 does not know them, and would refuse to start with them
// in its valkey.conf). With the directives on, deleting the 9.1 primary's pod under a writing
// client still goes through the preStop hand-over: the machine records primary-leaving and a
// switchover, no acknowledged write is lost, and the process that replaces the pod gets the
// directives again.
func TestValkey9DirectivesFollowTheReportedVersionAndThePrimaryStillHandsOver(t *testing.T) {
	ns := cl.Namespace(t)
	_, tap := startTappedOperator(t)
	ctx := ctxFor(t, 15*time.Minute)
	withTLS := func(name, image string) func(*v1alpha1.ValkeyCluster) {
		return func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Image = image
			vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSBoth, SecretName: name + "-tls"}
		}
	}
	tlsSecret(t, ctx, ns, "nine")
	tlsSecret(t, ctx, ns, "eight")
	nine := createReplication(t, ns, "nine", 3, withTLS("nine", "valkey/valkey:9.1"))
	eight := createReplication(t, ns, "eight", 2, withTLS("eight", "valkey/valkey:8.0"))

	want9 := map[string]string{"shutdown-on-sigterm": "failover", "tls-auto-reload-interval": "60"}
	directivesOn(t, nine, want9)
	for pod, got := range nodeDirectives(t, nine) {
		if !strings.HasPrefix(got["version"], "9.1.") {
			t.Fatalf("node %s of the 9.1 cluster reports %v", pod, got)
		}
	}
	olds := nodeDirectives(t, eight)
	if len(olds) != 2 {
		t.Fatalf("the 8.0 cluster's nodes answer %v", olds)
	}
	for pod, got := range olds {
		if !strings.HasPrefix(got["version"], "8.0.") || got["shutdown-on-sigterm"] != "default" || got["tls-auto-reload-interval"] != "" {
			t.Errorf("8.0 node %s: %v, want shutdown-on-sigterm default and no tls-auto-reload-interval", pod, got)
		}
	}

	tapWorks(t, tap, ns, "nine")
	seq := len(get(t, ns, "nine").Status.History)
	res := gapScenario(t, ns, "nine", tap, "", "delete-pod", 0)
	if res.lost > 0 || res.acked == 0 {
		t.Fatalf("%d of %d acknowledged writes lost deleting the primary's pod", res.lost, res.acked)
	}
	vc := get(t, ns, "nine")
	var events []string
	leaving, switched := false, false
	for _, h := range vc.Status.History[min(seq, len(vc.Status.History)):] {
		events = append(events, h.Event)
		leaving = leaving || h.Event == "primary-leaving" && strings.Contains(h.Message, "pod is being deleted")
		switched = switched || h.Event == "failover-complete" && strings.Contains(h.Message, "pod stops")
		if h.Event == "primary-lost" {
			t.Errorf("the primary was lost, not handed over: %s", h.Message)
		}
	}
	if !leaving || !switched {
		t.Fatalf("no hand-over in the history: %v\n%s", events, summary(vc))
	}
	directivesOn(t, vc, want9)
	t.Logf("9.1 with the directives: primary's pod deleted, handed over (%v), longest write gap %s, %d acknowledged, none lost", events, res.gap, res.acked)
}

// directivesOn waits until every node of vc has the directives want (the operator sets them
// live once a process answers).
func directivesOn(t *testing.T, vc *v1alpha1.ValkeyCluster, want map[string]string) {
	t.Helper()
	var last map[string]map[string]string
	deadline := time.Now().Add(time.Minute)
	for {
		last = nodeDirectives(t, vc)
		// Every node, the one whose pod was just re-created too, once it is ready again.
		ok := len(last) > 0 && len(last) == len(vc.Status.Nodes)
		for _, got := range last {
			for k, v := range want {
				ok = ok && got[k] == v
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: nodes have %v, want %v on each", vc.Name, last, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// nodeDirectives asks every ready pod of vc for shutdown-on-sigterm and
// tls-auto-reload-interval (CONFIG GET as the operator's user; a directive the server does not
// know is absent), and for its version (INFO server's valkey_version, under "version").
func nodeDirectives(t *testing.T, vc *v1alpha1.ValkeyCluster) map[string]map[string]string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels{kube.LabelCluster: vc.Name}); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || !podReady(&p) {
			continue // not serving yet (a re-created pod starting): the next look sees it
		}
		c := operatorClient(t, vc, p.Status.PodIP)
		got, err := c.Do(ctx, c.B().ConfigGet().Parameter("shutdown-on-sigterm").Parameter("tls-auto-reload-interval").Build()).AsStrMap()
		if err != nil {
			c.Close()
			continue // restarting: the next look sees it
		}
		info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
		c.Close()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "valkey_version:"); ok {
				got["version"] = v
			}
		}
		out[p.Name] = got
	}
	return out
}
