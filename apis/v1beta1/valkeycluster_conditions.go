package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a ValkeyCluster. There is one condition per state, named after it, and
// exactly one of them is True: the current state. Its reason is the event that caused the
// last transition (in CamelCase) and its lastTransitionTime says since when. A state
// condition is never used to decide anything; status.state is the machine's input.
const (
	ConditionBootstrapping = string(StateBootstrapping)
	ConditionSteady        = string(StateSteady)
	ConditionFailingOver   = string(StateFailingOver)
	ConditionRolling       = string(StateRolling)
	ConditionResharding    = string(StateResharding)
	ConditionRestoring     = string(StateRestoring)
	ConditionHibernated    = string(StateHibernated)

	// ConditionReady is for users and tools (kubectl wait --for=condition=Ready): True while
	// the cluster serves writes on its recognised primary.
	ConditionReady = "Ready"
)

// States returns every state of the state machine, in the order of the documentation.
func States() []State {
	return []State{StateBootstrapping, StateSteady, StateFailingOver, StateRolling, StateResharding, StateRestoring, StateHibernated}
}

// StateConditionTypes returns the condition type of every state, in the order of States.
func StateConditionTypes() []string {
	states := States()
	types := make([]string, len(states))
	for i, s := range states {
		types[i] = string(s)
	}
	return types
}

// IsReady reports whether the cluster's Ready condition is True.
func IsReady(c *ValkeyCluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, ConditionReady)
}

// CheckStateConditions verifies the invariant of the state conditions: each state has one,
// exactly one is True, and it is the condition of state. The operator checks it before it
// writes status; tools can check it when they read one.
func CheckStateConditions(conds []metav1.Condition, state State) error {
	trues := 0
	for _, typ := range StateConditionTypes() {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			return fmt.Errorf("condition %s is missing", typ)
		}
		if c.Status == metav1.ConditionTrue {
			trues++
			if typ != string(state) {
				return fmt.Errorf("condition %s is True but the state is %q", typ, state)
			}
		}
	}
	if trues != 1 {
		return fmt.Errorf("%d state conditions are True, want exactly 1 (%s)", trues, state)
	}
	return nil
}
