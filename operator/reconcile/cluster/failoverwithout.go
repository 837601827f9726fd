package cluster

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// clearFailoverWithout removes the failover-without annotation once it has done its work (the
// failover completed) or is not needed (every pod it names answers again), so that a decision
// to give up a lost node's writes never applies to a later failover it was not made for. A
// name that is not a pod of the cluster is reported and the annotation removed.
func (r *Reconciler) clearFailoverWithout(ctx context.Context, vc *v1beta1.ValkeyCluster, obs machine.Observation, d machine.Decision) error {
	names := podList(vc.Annotations[v1beta1.AnnotationFailoverWithout])
	if len(names) == 0 {
		return nil
	}
	var why string
	var unknown []string
	answering := 0
	for _, name := range names {
		found := false
		for _, n := range obs.Nodes {
			if n.Name == name {
				found = true
				if n.Reachable {
					answering++
				}
			}
		}
		if !found {
			unknown = append(unknown, name)
		}
	}
	switch {
	case len(unknown) > 0:
		r.event(vc, corev1.EventTypeWarning, "FailoverWithoutRefused", "%s: not a pod of this cluster; name the pods to go on without in %s again", strings.Join(unknown, ", "), v1beta1.AnnotationFailoverWithout)
		why = "it names pods that do not exist"
	case d.Transition != nil && d.Transition.Event == machine.EventFailoverComplete:
		why = "the failover it was given for completed"
	case answering == len(names):
		why = "every pod it names answers again"
	default:
		return nil
	}
	r.event(vc, corev1.EventTypeNormal, "FailoverWithoutCleared", "%s removed: %s", v1beta1.AnnotationFailoverWithout, why)
	return r.setAnnotation(ctx, vc, v1beta1.AnnotationFailoverWithout, "", "failover-without-annotation")
}
