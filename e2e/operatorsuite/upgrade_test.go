package operatorsuite

import (
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestARollingUpgradeFrom80To91KeepsEveryWrite changes the image of a replicated cluster from
// valkey/valkey:8.0 to valkey/valkey:9.1: a real version change in the local cluster (Debian's
// 8.0 binaries, then 9.1.2 built from Debian's source package). Every pod rolls, each node
// reports 9.1.2 in INFO server (asked of the node itself, not of the operator), and a client
// writing all along loses no acknowledged write. The 9.1 nodes get shutdown-on-sigterm failover
// live, without a second roll.
func TestARollingUpgradeFrom80To91KeepsEveryWrite(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "upg", 6*time.Minute)
	if got := nodeVersions(t, vc); !allPrefixed(got, "8.0.") {
		t.Fatalf("before the upgrade the nodes run %v, want 8.0.x", got)
	}
	c := writable(t, vc)
	before := podRevisions(t, ns)
	w := startWriter(ctx, c, "upg")
	vc = get(t, ns, "upg")
	vc.Spec.Image = "valkey/valkey:9.1"
	update(t, ctx, vc)
	vc = waitFor(t, ns, "upg", 4*time.Minute, "rolled to 9.1 and Steady", everyPodRestarted(t, ns, before, 3))
	if got := nodeVersions(t, vc); !allPrefixed(got, "9.1.2") {
		t.Fatalf("after the upgrade the nodes run %v, want 9.1.2", got)
	}
	// The nodes reporting 9.1 get 9.x's directives live, without a second roll.
	rolled := podRevisions(t, ns)
	directivesOn(t, vc, map[string]string{"shutdown-on-sigterm": "failover"})
	if now := podRevisions(t, ns); !maps.Equal(now, rolled) {
		t.Fatalf("the 9.1 directives rolled the pods again: %v, then %v", rolled, now)
	}
	lost, acked := w.lost(t, writable(t, vc))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost in the upgrade:\n%s", lost, acked, summary(vc))
	}
	checkReplication(t, vc, 2)
	t.Logf("8.0 -> 9.1.2: %d writes acknowledged, none lost, %d failed and retried", acked, w.failures.Load())
}

// nodeVersions asks every pod's Valkey for its version (INFO server, as the application user).
func nodeVersions(t *testing.T, vc *v1alpha1.ValkeyCluster) map[string]string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var pods corev1.PodList
	if err := k.List(ctx, &pods, client.InNamespace(vc.Namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(p.Status.PodIP, "6379")}, Password: password(t, vc),
			DisableCache: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
		c.Close()
		if err != nil {
			t.Fatalf("%s: INFO server: %v", p.Name, err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "valkey_version:"); ok {
				out[p.Name] = v
			}
		}
	}
	return out
}

func allPrefixed(versions map[string]string, prefix string) bool {
	for _, v := range versions {
		if !strings.HasPrefix(v, prefix) {
			return false
		}
	}
	return len(versions) > 0
}
