package cluster

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// podChanged passes pod events that can change a decision: creation, deletion, and updates
// of the IP, readiness, running state, running container (a restart) or deletion mark. Our own role-label patches and the
// node agent's heartbeat-like status rewrites do not wake the loop.
type podChanged struct{ predicate.Funcs }

func (podChanged) Create(event.CreateEvent) bool   { return true }
func (podChanged) Delete(event.DeleteEvent) bool   { return true }
func (podChanged) Generic(event.GenericEvent) bool { return false }

func (podChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Pod)
	n, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return o.Status.PodIP != n.Status.PodIP || podFacts(o) != podFacts(n) || valkeyContainerID(o) != valkeyContainerID(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}
