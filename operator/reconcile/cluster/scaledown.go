package cluster

import (
	"context"
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// scaleDownOf is what machine.CheckScaleDown sees of this turn: the pods each StatefulSet
// runs, what each node answered, and each process the action keeps asked for its run id
// right now (one that restarted since the decision may have come back empty).
func scaleDownOf(ctx context.Context, w *world, a machine.EnsureObjects) machine.ScaleDown {
	running := map[int]int{}
	for sh, sts := range w.sets {
		pods := 0
		if sts.Spec.Replicas != nil {
			pods = int(*sts.Spec.Replicas)
		}
		running[sh] = pods
	}
	s := machine.ScaleDownOf(a, w.obs.Spec.Mode, running, w.obs.Nodes)
	s.PodName = func(shard, ordinal int) string { return fmt.Sprintf("%s-%d", w.sets[shard].Name, ordinal) }
	s.Alive = func(k machine.Proc) error {
		pod := w.pods[k.Node]
		if pod == nil || pod.Status.PodIP == "" {
			return fmt.Errorf("%s has no pod", k.Node)
		}
		return w.pool.Alive(ctx, pod.Status.PodIP, k.RunID)
	}
	return s
}
