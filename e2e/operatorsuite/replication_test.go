package operatorsuite

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
)

func TestReplicationReachesSteadyAndReplicatesThroughTheClientService(t *testing.T) {
	_, ctx, vc := steadyReplication(t, "cache", 3*time.Minute)
	h := vc.Status.History
	if len(h) == 0 || h[0].From != v1alpha1.StateBootstrapping || h[len(h)-1].To != v1alpha1.StateSteady || h[0].Seq != 1 || h[0].Reason == "" {
		t.Fatalf("history should start Bootstrapping -> ... -> Steady with reasons:\n%s", summary(vc))
	}
	pass := password(t, vc)
	primary := writable(t, vc)
	if err := primary.Do(ctx, primary.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatalf("SET through the client Service: %v\n%s", err, summary(vc))
	}
	for _, n := range vc.Status.Nodes {
		if n.Role != v1alpha1.NodeRoleReplica {
			continue
		}
		c := appClient(t, n.IP+":6379", pass)
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			v, err := c.Do(ctx, c.B().Get().Key("k").Build()).ToString()
			return err == nil && v == "v", nil
		})
		if err != nil {
			t.Fatalf("replica %s never had the key: %v", n.Pod, err)
		}
	}
	replicas := 0
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRoleReplica {
			replicas++
		}
	}
	if replicas != 2 {
		t.Fatalf("want 2 replicas, status shows %d:\n%s", replicas, summary(vc))
	}
}
