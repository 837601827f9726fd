package cluster

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// clearFailoverWithout removes the failover-without annotation once it has done its work (the
// failover completed) or is not needed (every pod it names answers again), so that a decision to
// give up a lost node's writes never applies to a later failover it was not made for. A name
// that is not a pod of the cluster is reported and the annotation removed.
func (r *Reconciler) clearFailoverWithout(ctx context.Context, vc *v1beta1.ValkeyCluster, obs machine.Observation, d machine.Decision) error {
	names := podList(vc.Annotations[v1beta1.AnnotationFailoverWithout])
	if len(names) == 0 {
		return nil
	}
	why, unknown := failoverWithoutDone(names, obs, d)
	if len(unknown) > 0 {
		r.event(vc, corev1.EventTypeWarning, "FailoverWithoutRefused", "%s: not a pod of this cluster; name the pods to go on without in %s again", strings.Join(unknown, ", "), v1beta1.AnnotationFailoverWithout)
	}
	if why == "" {
		return nil
	}
	// The Event follows the write: one who sees it (a person, a test) finds the annotation gone.
	if err := r.setAnnotation(ctx, vc, v1beta1.AnnotationFailoverWithout, "", "failover-without-annotation"); err != nil {
		return err
	}
	r.event(vc, corev1.EventTypeNormal, "FailoverWithoutCleared", "%s removed: %s", v1beta1.AnnotationFailoverWithout, why)
	return nil
}

// failoverWithoutDone says why the annotation naming names is to go ("": it stays), and which
// names are no pod of the cluster. A deposed pod the record keeps does not count as answering
// again: named, it answers and gives its keys beyond its mark up
// (machine.WaitDeposedMayHoldTheLine), which the failover needs until it completes, and the
// pod resyncs after it.
func failoverWithoutDone(names []string, obs machine.Observation, d machine.Decision) (why string, unknown []string) {
	answering := 0
	for _, name := range names {
		found := false
		for _, n := range obs.Nodes {
			if n.Name == name {
				found = true
				if n.Reachable && !deposed(d.Next, name) {
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
		return "it names pods that do not exist", unknown
	case d.Transition != nil && d.Transition.Event == machine.EventFailoverComplete:
		return "the failover it was given for completed", nil
	case answering == len(names):
		return "every pod it names answers again", nil
	}
	return "", nil
}

// deposed reports whether p records pod as deposed (its volume may hold writes off the line).
func deposed(p machine.Persisted, pod string) bool {
	for _, rec := range p.Shards {
		for _, m := range rec.Deposed {
			if m.Pod == pod {
				return true
			}
		}
	}
	return false
}
