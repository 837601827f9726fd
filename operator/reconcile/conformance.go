package reconcile

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/conformance"
)

// ConformanceWorld is the real side of the actuator contract (machine/conformance): one
// cluster's actuators and observer, the very code a reconcile runs, driven outside of one.
// Nothing else may act on the cluster meanwhile (no operator running against it).
type ConformanceWorld struct {
	r   *Reconciler
	key types.NamespacedName
	vc  *v1alpha1.ValkeyCluster
	w   *world
}

// NewConformanceWorld drives the cluster key with r's actuators and observer.
func NewConformanceWorld(r *Reconciler, key types.NamespacedName) *ConformanceWorld {
	r.defaults()
	return &ConformanceWorld{r: r, key: key}
}

// Observe is what a reconcile would see now.
func (c *ConformanceWorld) Observe(ctx context.Context) (machine.Observation, error) {
	var vc v1alpha1.ValkeyCluster
	if err := c.r.Client.Get(ctx, c.key, &vc); err != nil {
		return machine.Observation{}, err
	}
	w, err := c.r.look(ctx, &vc)
	if err != nil {
		return machine.Observation{}, err
	}
	c.vc, c.w = &vc, w
	return w.obs, nil
}

// Apply carries out a as a reconcile does, on the world last observed.
func (c *ConformanceWorld) Apply(ctx context.Context, a machine.Action) error {
	if c.w == nil {
		if _, err := c.Observe(ctx); err != nil {
			return err
		}
	}
	return c.r.do(ctx, c.vc, c.w, a)
}

// Await observes every 200 ms, for up to a minute, until cond holds.
func (c *ConformanceWorld) Await(ctx context.Context, what string, cond func(machine.Observation) bool) error {
	var last machine.Observation
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := c.Observe(ctx)
		if err != nil {
			return false, nil
		}
		last = o
		return cond(o), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %v; last seen: %s", what, err, conformance.Describe(last))
	}
	return nil
}
