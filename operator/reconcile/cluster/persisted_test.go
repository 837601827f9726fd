package cluster

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// fill sets every field of v (recursively) to a distinct non-zero value, so that a field the
// status conversion forgets shows up as a difference.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, *n*1000, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), n)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.String:
		if v.Type() == reflect.TypeOf(machine.State("")) {
			v.SetString(string(machine.States()[*n%len(machine.States())]))
			return
		}
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Bool:
		v.SetBool(true)
	}
}

// TestPersistedSurvivesTheStatusRoundTrip writes a Persisted with every field set into
// status, through JSON (what the API server stores), and back: nothing of the machine's
// memory may be lost, or a restarted operator would decide differently. The status holds one
// operation, whose state says which of the operation's parts are in use: each state is tried
// with every field of its parts set.
func TestPersistedSurvivesTheStatusRoundTrip(t *testing.T) {
	var filled machine.Persisted
	n := 0
	fill(reflect.ValueOf(&filled).Elem(), &n)
	all := filled.Op
	for _, c := range []struct {
		state machine.State
		op    machine.Operation
	}{
		{machine.FailingOver, machine.Operation{Election: all.Election, Switchover: all.Switchover, HandOver: machine.HandOverMark{Shard: all.Election.Shard, To: all.HandOver.To}}},
		{machine.Rolling, machine.Operation{Roll: all.Roll, HandOver: all.HandOver}},
		{machine.Restoring, machine.Operation{Restore: all.Restore}},
		{machine.Resharding, machine.Operation{Reshard: all.Reshard}},
		{machine.Bootstrapping, machine.Operation{Hibernation: all.Hibernation}},
		{machine.Steady, machine.Operation{}},
	} {
		p := filled
		p.State, p.Op = c.state, c.op
		st := v1beta1.ValkeyClusterStatus{State: v1beta1.State(p.State), Machine: machineStatusOf(p)}
		data, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back v1beta1.ValkeyClusterStatus
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		got := persistedOf(&back)
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("%s: round trip lost something:\n got  %+v\n want %+v", c.state, got, p)
		}
	}
}
