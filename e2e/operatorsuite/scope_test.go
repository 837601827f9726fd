package operatorsuite

import (
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

// TestWatchNamespaceLimitsWhatTheOperatorTouches: an operator scoped to one namespace runs
// the clusters there and leaves the others alone (not even a status).
func TestWatchNamespaceLimitsWhatTheOperatorTouches(t *testing.T) {
	mine, other := cl.Namespace(t), cl.Namespace(t)
	startOperator(t, "", func(c *manager.Config) { c.WatchNamespace = mine })
	ctx := ctxFor(t, 3*time.Minute)
	if err := k.Create(ctx, newCluster(other, "ignored", v1alpha1.TopologyStandalone, 1)); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(ctx, newCluster(mine, "managed", v1alpha1.TopologyStandalone, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, mine, "managed", 2*time.Minute, "Steady", steadyWith(1))
	time.Sleep(2 * time.Second)
	if vc := get(t, other, "ignored"); vc.Status.State != "" || len(vc.Finalizers) != 0 {
		t.Fatalf("a cluster outside --watch-namespace was touched:\n%s", summary(vc))
	}
}
