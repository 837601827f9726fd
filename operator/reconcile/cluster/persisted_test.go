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
// memory may be lost, or a restarted operator would decide differently.
func TestPersistedSurvivesTheStatusRoundTrip(t *testing.T) {
	var p machine.Persisted
	n := 0
	fill(reflect.ValueOf(&p).Elem(), &n)
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
		t.Fatalf("round trip lost something:\n got  %+v\n want %+v", got, p)
	}
}
