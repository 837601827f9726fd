package users

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A ValkeyACL is Ready once Applied; Pending and Refused are the reason it is not.
func TestACLReadyFollowsThePhase(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	st := v1beta1.ValkeyACLStatus{Phase: aclRefused, Reason: "rule +@all needs allowAdmin"}
	setACLReady(&st, nil, 2, t0)
	c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionACLReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Refused" || c.Message != st.Reason || c.ObservedGeneration != 2 {
		t.Fatalf("refused: %+v", c)
	}
	prev := st.Conditions
	st = v1beta1.ValkeyACLStatus{Phase: aclApplied, Applied: "3/3"}
	setACLReady(&st, prev, 3, t0.Add(time.Minute))
	c = meta.FindStatusCondition(st.Conditions, v1beta1.ConditionACLReady)
	if c.Status != metav1.ConditionTrue || c.Reason != "Applied" || !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("applied: %+v", c)
	}
	if prev[0].Status != metav1.ConditionFalse {
		t.Fatal("setACLReady changed the previous conditions in place")
	}
}
