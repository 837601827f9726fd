package operatorsuite

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestReCreationOnKeptClaimsLosesNoAcknowledgedKey is the routine of a GitOps re-sync or a
// namespace restore: a Durable cluster holding WAIT-acknowledged keys is deleted (its claims
// are kept, by design) and the same manifest is applied again. Before the bootstrap election,
// Bootstrapping promoted pod 0 whatever it held and the others full-synced from it: with pod
// 0's claim lost, every key was gone. Three ways the kept volumes can differ:
//   - claim-0-lost: pod 0's claim is deleted, pods 1 and 2 hold every key;
//   - all-kept: every claim is kept;
//   - claim-0-older: pod 0's volume holds older data (it was cut off while the others took
//     more acknowledged writes);
//   - smaller: a cluster of four is applied again with two pods, and the claims of pods 0 and
//     1 are lost: every key is on the claims of pods 2 and 3 alone, beyond the new spec. The
//     bootstrap starts them, elects among all four and scales down to two after a hand-over
//     (simulator: regressions/recreate-past-claims-beyond-the-spec.sched).
//
// Every acknowledged key must be on every node afterwards, read with another client than the
// operator's, and the history must say which node the data came from.
func TestReCreationOnKeptClaimsLosesNoAcknowledgedKey(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	t.Run("cases", func(t *testing.T) {
		for _, c := range []struct {
			name        string
			lostClaims  int // the claims of pods 0 to lostClaims-1 are deleted
			older0      bool
			notFromPod0 bool
			pods, again int32 // the pods of the cluster, and of the one applied again (0: as many)
		}{
			{name: "claim-0-lost", lostClaims: 1, notFromPod0: true},
			{name: "all-kept"},
			{name: "claim-0-older", older0: true, notFromPod0: true},
			{name: "smaller", lostClaims: 2, notFromPod0: true, pods: 4, again: 2},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				name := c.name
				ctx := ctxFor(t, 6*time.Minute)
				pods, again := max(c.pods, 3), c.again
				if again == 0 {
					again = pods
				}
				if err := k.Create(ctx, newCluster(ns, name, v1alpha1.TopologyReplication, pods)); err != nil {
					t.Fatal(err)
				}
				vc := waitFor(t, ns, name, 2*time.Minute, "Steady", steadyWith(int(pods)))
				writer := writable(t, vc)
				var keys []string
				// WAIT for every replica: the keys must be on the claims that are kept.
				if err := setAndWait(ctx, writer, "a", 300, int64(pods)-1); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, prefixed("a", 300)...)
				if c.older0 {
					// Pod 0 must be a replica that misses writes the others acknowledged: hand
					// the primary role to pod 1, cut pod 0 off from it, write more.
					vc = switchoverTo(t, ns, name, name+"-1")
					ip0, ip1 := mustAddr(t, vc, name+"-0"), mustAddr(t, vc, name+"-1")
					if err := cl.Partition(ip0, ip1); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = cl.Heal() })
					writer = writable(t, vc)
					if err := setAndWait(ctx, writer, "b", 200, 1); err != nil {
						t.Fatal(err)
					}
					keys = append(keys, prefixed("b", 200)...)
				}
				deleteKeepingClaims(t, ctx, ns, name, int(pods))
				if c.older0 {
					if err := cl.Heal(); err != nil {
						t.Fatal(err)
					}
				}
				for i := range c.lostClaims {
					deleteClaim(t, ctx, ns, fmt.Sprintf("data-%s-%d", name, i))
				}
				if err := k.Create(ctx, newCluster(ns, name, v1alpha1.TopologyReplication, again)); err != nil {
					t.Fatal(err)
				}
				vc = waitFor(t, ns, name, 3*time.Minute, "Steady again on the kept claims", steadyWith(int(again)))
				var election *v1alpha1.HistoryEntry
				for i, h := range vc.Status.History {
					if h.Event == "bootstrap-elected" {
						election = &vc.Status.History[i]
					}
				}
				if election == nil {
					t.Fatalf("no bootstrap-elected in the history of a cluster started on kept data:\n%+v", vc.Status.History)
				}
				t.Logf("history: %s", election.Message)
				if c.notFromPod0 && strings.Contains(election.Message, name+"-0 (") {
					t.Fatalf("bootstrapped from %s-0, which held less: %s", name, election.Message)
				}
				// Every node holds the same keys: their data digests (taken by the real survey,
				// with DEBUG off as the pods run) say so, and the election need not go by key count.
				if c.name == "all-kept" && !strings.Contains(election.Message, "hold(s) the same data (equal digests)") {
					t.Fatalf("nodes with the same data elected without comparing digests: %s", election.Message)
				}
				if again < pods && !historyHas(vc, "beyond the spec (started for the volumes kept there") {
					t.Fatalf("bootstrap-complete does not say why pods beyond the spec ran:\n%+v", vc.Status.History)
				}
				missing := missingOnEveryNode(t, ctx, vc, keys)
				if len(missing) > 0 {
					t.Fatalf("%d acknowledged keys lost after the re-creation (%s):\n%s\noperator:\n%s", len(missing), strings.Join(missing, "; "), summary(vc), operatorTrail(ns))
				}
			})
		}
	})
}

func prefixed(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// switchoverTo asks for a planned switchover and waits until pod is the primary.
func switchoverTo(t *testing.T, ns, name, pod string) *v1alpha1.ValkeyCluster {
	t.Helper()
	vc := get(t, ns, name)
	if vc.Annotations == nil {
		vc.Annotations = map[string]string{}
	}
	vc.Annotations[v1beta1.AnnotationSwitchoverTo] = pod
	// As a user's write: the operator updates the object too (its answered requests), so the
	// copy read above may be stale by the time it is written.
	update(t, ctxFor(t, 10*time.Second), vc)
	return waitFor(t, ns, name, time.Minute, "switched over to "+pod, func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary == pod && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
}

func mustAddr(t *testing.T, vc *v1alpha1.ValkeyCluster, pod string) netip.Addr {
	t.Helper()
	for _, n := range vc.Status.Nodes {
		if n.Pod == pod {
			return netip.MustParseAddr(n.IP)
		}
	}
	t.Fatalf("%s not in status", pod)
	return netip.Addr{}
}

// deleteKeepingClaims deletes the cluster and waits until its pods are gone; its claims (one
// per pod) stay.
func deleteKeepingClaims(t *testing.T, ctx context.Context, ns, name string, claims int) {
	t.Helper()
	if err := k.Delete(ctx, get(t, ns, name)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := k.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"valkey.fsm.dev/cluster": name}); err != nil {
			return false, nil
		}
		var vc v1alpha1.ValkeyCluster
		gone := apierrors.IsNotFound(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc))
		return gone && len(pods.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s was not deleted: %v", name, err)
	}
	var kept corev1.PersistentVolumeClaimList
	if err := k.List(ctx, &kept, client.InNamespace(ns), client.MatchingLabels{"valkey.fsm.dev/cluster": name}); err != nil || len(kept.Items) != claims {
		t.Fatalf("the claims of %s were not kept: %d of %d, %v", name, len(kept.Items), claims, err)
	}
}

// deleteClaim deletes a claim and waits until it is gone with its volume.
func deleteClaim(t *testing.T, ctx context.Context, ns, claim string) {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, &pvc); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(k.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc)), nil
	})
	if err != nil {
		t.Fatalf("claim %s was not deleted: %v", claim, err)
	}
}

// missingOnEveryNode reads every key on every node with a client of its own (not the
// operator's code) and lists what is missing where.
func missingOnEveryNode(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster, keys []string) []string {
	t.Helper()
	pass := password(t, vc)
	var missing []string
	for _, n := range vc.Status.Nodes {
		nc, err := vk.NewClient(vk.ClientOption{InitAddress: []string{n.IP + ":6379"}, Password: pass, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("%s: %v", n.Pod, err)
		}
		lost := 0
		for _, key := range keys {
			if got, err := nc.Do(ctx, nc.B().Exists().Key(key).Build()).AsInt64(); err != nil || got != 1 {
				lost++
			}
		}
		nc.Close()
		if lost > 0 {
			missing = append(missing, fmt.Sprintf("%s lacks %d of %d", n.Pod, lost, len(keys)))
		}
	}
	return missing
}
