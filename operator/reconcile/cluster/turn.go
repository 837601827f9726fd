package cluster

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Turn is one cluster as a reconcile turn sees it: observed once, and able to carry out an
// action through the actuators a turn acts with. It is the loop's first and last step without
// the decision and the status write between them, for callers that choose the action
// themselves (the actuator contract's real side, e2e/operatorsuite): nothing else may act on
// the cluster meanwhile.
type Turn struct {
	r  *Reconciler
	vc *v1beta1.ValkeyCluster
	w  *world
}

// Observe reads the cluster key and observes it as a turn does: its objects, its auth
// Secret, and a survey of every node.
func (r *Reconciler) Observe(ctx context.Context, key types.NamespacedName) (*Turn, error) {
	r.defaults()
	var vc v1beta1.ValkeyCluster
	if err := r.Client.Get(ctx, key, &vc); err != nil {
		return nil, err
	}
	w, err := r.look(ctx, &vc)
	if err != nil {
		return nil, err
	}
	return &Turn{r: r, vc: &vc, w: w}, nil
}

// Observation is what the machine would be given.
func (t *Turn) Observation() machine.Observation { return t.w.obs }

// Apply carries a out as the turn's actuators do, against the world this turn observed.
func (t *Turn) Apply(ctx context.Context, a machine.Action) error {
	return t.r.do(ctx, t.vc, t.w, a)
}
