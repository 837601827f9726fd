package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// scaleObjectsBehindTheOperator asks the StatefulSets for one more pod, as a person running
// kubectl scale would (FaultScaleStatefulSet), within the topology's pods (the faults can
// name them), in whatever state the machine is. During a rollout or a resharding the machine
// leaves the objects as they are, so the pods beyond the record answer until the operation
// ends, and a deposed pod on a claim a scale-down kept comes back in the middle of it; in
// Steady the machine sets the objects back at once; in Bootstrapping the pod may start on a
// claim kept from before a re-creation, as the node the others' nodes.conf still name
// (regressions/cluster-scaled-during-bootstrap-forgets-a-live-node.sched). A hibernated
// cluster's StatefulSets run no pod and are left so.
func (w *World) scaleObjectsBehindTheOperator() {
	if w.objects.Shards == 0 || w.objects.Replicas == machine.StoppedReplicas || w.objects.Replicas >= w.topo.maxReplicas() {
		return
	}
	w.objects.Replicas++
	w.note("kube: the StatefulSets scaled to %d pod(s) per shard behind the operator's back", 1+w.objects.Replicas)
}
