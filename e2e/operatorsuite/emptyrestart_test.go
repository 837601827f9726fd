package operatorsuite

import (
	"context"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

// TestEmptyRestartedPrimaryNeverWipesItsReplicas is Valkey's replication hazard on
// Kubernetes: a primary without persistence whose container restarts comes back empty, and
// replicas that full-sync from it lose everything. Here the primary of a Cache cluster (no
// persistence) is SIGKILLed and restarted empty at once; every WAIT-acknowledged key must
// still be on every node once the cluster is Steady again.
func TestEmptyRestartedPrimaryNeverWipesItsReplicas(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	vc := newCluster(ns, "empty", v1alpha1.TopologyReplication, 3)
	vc.Spec.Profile = v1alpha1.ProfileCache
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "empty", 2*time.Minute, "Steady", steadyWith(3))
	c := writable(t, vc)
	const n = 100
	if err := setAndWait(ctx, c, "k", n, 2); err != nil {
		t.Fatal(err)
	}
	old := vc.Status.Primary
	// WipeVolumes kills the containers and empties the pod's directories before they start
	// again: the process that comes back has no data, whatever the profile.
	if err := cl.WipeVolumes(ctx, ns, old); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, old, metav1.GetOptions{})
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1, nil
	})
	if err != nil {
		t.Fatalf("the wiped primary did not restart: %v", err)
	}
	vc = waitFor(t, ns, "empty", 2*time.Minute, "Steady again, every node back", steadyWith(3))
	pass := password(t, vc)
	// Every node, the restarted one included, must end up with the keys: replicas keep
	// theirs, and the empty node gets them back by syncing from a node that has them.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		vc = get(t, ns, "empty")
		for _, node := range vc.Status.Nodes {
			nc, err := vk.NewClient(vk.ClientOption{InitAddress: []string{node.IP + ":6379"}, Password: pass, DisableCache: true, ForceSingleClient: true})
			if err != nil {
				return false, nil
			}
			size, err := nc.Do(ctx, nc.B().Dbsize().Build()).AsInt64()
			nc.Close()
			if err != nil || size < n {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not every node has the %d keys after the empty restart of %s:\n%s\noperator's transitions and actions:\n%s", n, old, summary(vc), operatorTrail(ns))
	}
	t.Logf("primary %s restarted empty; primary now %s; every node kept the %d keys", old, vc.Status.Primary, n)
}
