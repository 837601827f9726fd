package machine

import (
	"fmt"
	"time"
)

// Condition mirrors a Kubernetes status condition (metav1.Condition without the Kubernetes
// dependency); the operator copies it field by field.
type Condition struct {
	Type               string
	Status             ConditionStatus
	Reason             string
	Message            string
	LastTransitionTime time.Time
}

// ConditionStatus is True or False (the machine never reports Unknown).
type ConditionStatus string

const (
	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"
)

// ConditionReady is the condition for users and tools: the cluster serves writes on a
// recorded primary in every shard. It is computed from each observation (see Observed), not
// by transitions.
const ConditionReady = "Ready"

// ApplyTransition returns the conditions after t: one per state, True only for t.To, with
// reason and message of t; LastTransitionTime moves only for conditions whose status flips.
// Other conditions (the observed ones: Ready, Progressing, Degraded) are kept as they are.
func ApplyTransition(conds []Condition, t Transition) []Condition {
	out := make([]Condition, 0, len(States())+1)
	set := func(typ string, status ConditionStatus) {
		c := Condition{Type: typ, Status: status, Reason: t.Reason(), Message: t.Message, LastTransitionTime: t.Time}
		if old, ok := findCondition(conds, typ); ok {
			if old.Status == status {
				c.LastTransitionTime = old.LastTransitionTime
				if status == ConditionFalse {
					c.Reason, c.Message = old.Reason, old.Message
				}
			}
		}
		out = append(out, c)
	}
	for _, s := range States() {
		status := ConditionFalse
		if s == t.To {
			status = ConditionTrue
		}
		set(string(s), status)
	}
	for _, c := range conds {
		if !isState(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

// InitialConditions are the conditions of a new cluster before any transition.
func InitialConditions(at time.Time) []Condition {
	return ApplyTransition(nil, Transition{To: Bootstrapping, Event: "", Message: "new cluster", Time: at})
}

func findCondition(conds []Condition, typ string) (Condition, bool) {
	for _, c := range conds {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

// CheckConditions verifies that exactly one state condition is True and that it is state's.
func CheckConditions(conds []Condition, state State) error {
	trues := 0
	for _, s := range States() {
		c, ok := findCondition(conds, string(s))
		if !ok {
			return fmt.Errorf("condition %s missing", s)
		}
		if c.Status == ConditionTrue {
			trues++
			if s != state {
				return fmt.Errorf("condition %s is True in state %s", s, state)
			}
		}
	}
	if trues != 1 {
		return fmt.Errorf("%d state conditions are True, want exactly 1", trues)
	}
	return nil
}

func isState(typ string) bool {
	for _, s := range States() {
		if string(s) == typ {
			return true
		}
	}
	return false
}
