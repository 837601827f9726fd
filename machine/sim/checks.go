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
//     Kubernetes API) decides exactly the same (on transitions and one decision in
//     rebuiltEvery).
func (o *Operator) checkDecision(obs machine.Observation, d machine.Decision) {
	w := o.w
	p := o.status.Persisted
	if t := d.Transition; t != nil {
		if !machine.InTable(*t) || t.From != p.State || t.Seq != p.Seq+1 || d.Next.State != t.To {
			w.violate(ViolationMachine, "transition %s from persisted %s #%d is not a table edge from there", t, p.State, p.Seq)
		}
	}
	// Without a transition the re-delivery is the same call again (d.Next is p): the rebuilt
	// machine below decides it once more from the stored p, which checks the same purity, so
	// only a transition's new state is given the observation again (four reconciles in five
	// take no transition; deciding twice more each was a third of a simulated step).
	if d.Transition != nil {
		again := machine.Decide(d.Next, obs)
		if again.Transition != nil {
			w.violate(ViolationMachine, "re-delivered observation caused another transition: %s", again.Transition)
		} else if !sameActions(again.Actions, d.Actions) {
			w.violate(ViolationMachine, "re-delivered observation changed the actions: %v vs %v", again.Actions, d.Actions)
		}
	}
	// The rebuilt machine is asked on every transition and on one decision in rebuiltEvery
	// otherwise. Since the stored state is a Clone (held to the JSON round trip by machine's
	// TestCloneIsTheJSONRoundTrip), it checks that Decide is deterministic and leaves its input
	// alone; asked on every decision it found nothing the other checks did not (the pinned
	// digests do not change without it) and was a sixth of an exploration's time.
	o.decided++
	if d.Transition == nil && o.decided%rebuiltEvery != 0 {
		return
	}
	rebuilt := machine.Decide(o.stored, obs)
	if !sameDecision(rebuilt, d) || (d.Transition != nil && !sameJSON(rebuilt.Next, d.Next)) {
		w.violate(ViolationMachine, "machine rebuilt from the stored state decides differently: %s vs %s", rebuilt, d)
	}
}

// store is what the API gives back for a persisted state: a JSON round trip, which Clone is
// without the encoding (machine's TestCloneIsTheJSONRoundTrip holds it to that; the encoding
// was a sixth of a simulated step).
func (o *Operator) store(p machine.Persisted) {
	o.stored = p.Clone()
}

// checkPersisted checks the status and journal after a transition was persisted: exactly
// one state condition True, the bounded history gap-free and ending at the state's
// sequence, and the journal folding to exactly the live persisted state and history (the
// fold is kept up to date entry by entry; machine.Fold of the whole journal is the same).
func (o *Operator) checkPersisted() {
	w := o.w
	st := o.status
	if err := machine.CheckConditions(st.Conditions, st.Persisted.State); err != nil {
		w.violate(ViolationMachine, "conditions: %v", err)
	}
	if err := machine.CheckHistory(st.History, historyLimit, st.Persisted.Seq); err != nil {
		w.violate(ViolationMachine, "history: %v", err)
	}
	if n := len(o.journal); n > 0 {
		if err := o.folded.Apply(o.journal[n-1]); err != nil {
			w.violate(ViolationMachine, "journal: %v", err)
			return
		}
	}
	if !sameJSON(o.folded.State, st.Persisted) {
		w.violate(ViolationMachine, "journal folds to %+v, live state is %+v", o.folded.State, st.Persisted)
	}
	if !reflect.DeepEqual(o.folded.History(historyLimit), st.History) {
		w.violate(ViolationMachine, "journal history differs from status.history")
	}
	// The status keeps the operation in its flat form (machine.OperationRecord), shared by
	// every kind: what does not survive it is lost at the operator's next read of its status.
	if back := st.Persisted.Op.Record().Operation(st.Persisted.State); !reflect.DeepEqual(back, st.Persisted.Op) {
		w.violate(ViolationMachine, "the operation of %s reads back from its status record as %+v, was %+v", st.Persisted.State, back, st.Persisted.Op)
	}
}

// checkJournal folds the whole journal from scratch and compares it with the live status.
func (o *Operator) checkJournal() {
	f, err := machine.Fold(o.journal)
	if err != nil {
		o.w.violate(ViolationMachine, "journal: %v", err)
		return
	}
	if !sameJSON(f.State, o.status.Persisted) || !reflect.DeepEqual(f.History(historyLimit), o.status.History) {
		o.w.violate(ViolationMachine, "journal folds to %+v, live state is %+v", f.State, o.status.Persisted)
	}
}

// rebuiltEvery is how often a decision without a transition is checked against the machine
// rebuilt from the stored state.
const rebuiltEvery = 4

// sameDecision reports whether a and b read alike. Equal values print alike, so only unequal
// ones are printed (printing both was a twentieth of an exploration's time).
func sameDecision(a, b machine.Decision) bool {
	return reflect.DeepEqual(a, b) || a.String() == b.String()
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

// sameJSON reports whether a and b store alike. Equal values encode alike, so only unequal
// ones are encoded (the encoding is most of a simulated step's cost otherwise).
func sameJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ra, err1 := json.Marshal(a)
	rb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ra) == string(rb)
}
