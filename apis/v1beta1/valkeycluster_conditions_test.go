package v1beta1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionsFor returns one condition per state, True for the states in trues.
func conditionsFor(trues ...State) []metav1.Condition {
	var conds []metav1.Condition
	for _, s := range States() {
		status := metav1.ConditionFalse
		for _, t := range trues {
			if s == t {
				status = metav1.ConditionTrue
			}
		}
		conds = append(conds, metav1.Condition{Type: string(s), Status: status, Reason: "Test"})
	}
	return conds
}

func TestStateConditionTypes(t *testing.T) {
	want := []string{"Bootstrapping", "Steady", "FailingOver", "Rolling", "Resharding", "Restoring", "Hibernated"}
	got := StateConditionTypes()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("StateConditionTypes() = %v, want %v", got, want)
	}
	consts := []string{ConditionBootstrapping, ConditionSteady, ConditionFailingOver, ConditionRolling, ConditionResharding, ConditionRestoring, ConditionHibernated}
	if strings.Join(consts, ",") != strings.Join(want, ",") {
		t.Errorf("condition constants = %v, want %v", consts, want)
	}
	got[0] = "changed"
	if StateConditionTypes()[0] != "Bootstrapping" {
		t.Error("StateConditionTypes returned a shared slice")
	}
}

func TestCheckStateConditions(t *testing.T) {
	withReady := append(conditionsFor(StateSteady), metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue})
	cases := []struct {
		name  string
		conds []metav1.Condition
		state State
		err   string
	}{
		{"one true, matching", conditionsFor(StateSteady), StateSteady, ""},
		{"Ready does not count as a state", withReady, StateSteady, ""},
		{"true one is another state", conditionsFor(StateRolling), StateSteady, "Rolling is True but the state is"},
		{"none true", conditionsFor(), StateSteady, "0 state conditions are True"},
		{"two true", conditionsFor(StateSteady, StateRolling), StateSteady, "Rolling is True but the state is"},
		{"missing", conditionsFor(StateSteady)[:5], StateSteady, "condition Restoring is missing"},
		{"empty state", conditionsFor(StateSteady), "", "Steady is True but the state is"},
	}
	for _, c := range cases {
		err := CheckStateConditions(c.conds, c.state)
		if c.err == "" && err != nil {
			t.Errorf("%s: unexpected error %v", c.name, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
}

func TestIsReady(t *testing.T) {
	c := &ValkeyCluster{}
	if IsReady(c) {
		t.Error("a cluster with no conditions is ready")
	}
	c.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse}}
	if IsReady(c) {
		t.Error("Ready=False is ready")
	}
	c.Status.Conditions[0].Status = metav1.ConditionTrue
	if !IsReady(c) {
		t.Error("Ready=True is not ready")
	}
}
