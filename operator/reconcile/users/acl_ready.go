package users

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A ValkeyACL's Ready condition says what its phase says, in the shape kubectl wait
// --for=condition=Ready and other tools read: True once Applied, False with the phase as the
// reason and the status's reason as the message otherwise. It is derived from the phase every
// time that is written, never decided apart from it. The transition time is now only when the
// status changes: meta.SetStatusCondition keeps the previous time otherwise.

// ACL phases, as ValkeyACLStatus.Phase documents them.
const (
	aclApplied = "Applied"
	aclPending = "Pending"
	aclRefused = "Refused"
)

// setACLReady sets an ACL status's Ready condition from its phase, keeping the transition time
// of the condition in previous when its status does not change.
func setACLReady(st *v1beta1.ValkeyACLStatus, previous []metav1.Condition, generation int64, now time.Time) {
	st.Conditions = nil
	for _, c := range previous {
		st.Conditions = append(st.Conditions, *c.DeepCopy())
	}
	ready := metav1.Condition{Type: v1beta1.ConditionACLReady, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	if st.Phase == aclApplied {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, aclApplied, "every answering node has the user ("+st.Applied+")"
	} else {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, st.Phase, st.Reason
	}
	meta.SetStatusCondition(&st.Conditions, ready)
}
