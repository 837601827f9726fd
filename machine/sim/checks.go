package sim

import (
	"encoding/json"
	"reflect"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The machine's own invariants, checked on every decision of the simulated operator.

// checkDecision checks a decision before it is persisted:
//   - a transition starts in the persisted state, follows its sequence and is in the table;
//   - re-delivering the same observation to the new persisted state adds no transition and
//     asks for the same actions;
//   - a machine rebuilt from the persisted state as stored (a JSON round trip, as through the
//     Kubernetes API) decides exactly the same.
func (o *Operator) checkDecision(obs machine.Observation, d machine.Decision) {
	w := o.w
	p := o.status.Persisted
	if t := d.Transition; t != nil {
		if !machine.InTable(*t) || t.From != p.State || t.Seq != p.Seq+1 || d.Next.State != t.To {
			w.violate(ViolationMachine, "transition %s from persisted %s #%d is not a table edge from there", t, p.State, p.Seq)
		}
	}
	again := machine.Decide(d.Next, obs)
	if again.Transition != nil {
		w.violate(ViolationMachine, "re-delivered observation caused another transition: %s", again.Transition)
	} else if !sameActions(again.Actions, d.Actions) {
		w.violate(ViolationMachine, "re-delivered observation changed the actions: %v vs %v", again.Actions, d.Actions)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		w.violate(ViolationMachine, "persisted state does not marshal: %v", err)
		return
	}
	var stored machine.Persisted
	if err := json.Unmarshal(raw, &stored); err != nil {
		w.violate(ViolationMachine, "persisted state does not unmarshal: %v", err)
		return
	}
	rebuilt := machine.Decide(stored, obs)
	if rebuilt.String() != d.String() || !sameJSON(rebuilt.Next, d.Next) {
		w.violate(ViolationMachine, "machine rebuilt from the stored state decides differently: %s vs %s", rebuilt, d)
	}
}

// checkPersisted checks the status and journal after a transition was persisted: exactly
// one state condition True, the bounded history gap-free and ending at the state's
// sequence, and the journal folding to exactly the live persisted state and history.
func (o *Operator) checkPersisted() {
	w := o.w
	st := o.status
	if err := machine.CheckConditions(st.Conditions, st.Persisted.State); err != nil {
		w.violate(ViolationMachine, "conditions: %v", err)
	}
	if err := machine.CheckHistory(st.History, historyLimit, st.Persisted.Seq); err != nil {
		w.violate(ViolationMachine, "history: %v", err)
	}
	folded, err := machine.Fold(o.journal)
	if err != nil {
		w.violate(ViolationMachine, "journal: %v", err)
		return
	}
	if !sameJSON(folded.State, st.Persisted) {
		w.violate(ViolationMachine, "journal folds to %+v, live state is %+v", folded.State, st.Persisted)
	}
	if !reflect.DeepEqual(folded.History(historyLimit), st.History) {
		w.violate(ViolationMachine, "journal history differs from status.history")
	}
}

func sameActions(a, b []machine.Action) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	ra, err1 := json.Marshal(a)
	rb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ra) == string(rb)
}
