package machine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fillAll sets every field of v (recursively) to a distinct non-zero value, pointers
// included, so that a field JSON cannot carry shows up as a difference.
func fillAll(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, *n, *n*1000, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				t := v.Type()
				panic("unexported field " + t.Name() + "." + t.Field(i).Name + ": JSON would drop it")
			}
			if v.Type().Field(i).Tag.Get("json") == "-" {
				continue // never reaches Decide (Valkey.KeyHashes: CompareKeys drops them)
			}
			fillAll(v.Field(i), n)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fillAll(v.Index(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fillAll(s.Index(i), n)
		}
		v.Set(s)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map, reflect.Interface, reflect.Func, reflect.Chan, reflect.Float32, reflect.Float64:
		panic("a " + v.Kind().String() + " in an observation: check that JSON carries it, then teach this test")
	}
}

// TestObservationSurvivesJSON: a journal keeps observations as JSON, and a replay decides on
// what it reads back; an Observation with every field set must come back equal, and the
// fingerprint of the copy must be the original's.
func TestObservationSurvivesJSON(t *testing.T) {
	var obs Observation
	n := 0
	fillAll(reflect.ValueOf(&obs).Elem(), &n)
	data, err := json.Marshal(JournaledObservation{Seq: 7, Time: obs.Time, Observation: &obs})
	if err != nil {
		t.Fatal(err)
	}
	var back JournaledObservation
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Observation == nil || !reflect.DeepEqual(*back.Observation, obs) {
		t.Fatalf("round trip lost something:\n got  %+v\n want %+v", back.Observation, obs)
	}
	a, okA := Fingerprint(obs)
	b, okB := Fingerprint(*back.Observation)
	if !okA || !okB || a != b {
		t.Fatal("the fingerprint changed through JSON")
	}
	later := obs
	later.Time = later.Time.Add(time.Second)
	if c, _ := Fingerprint(later); c != a {
		t.Fatal("the fingerprint depends on the time")
	}
	later.Nodes = append([]Node(nil), obs.Nodes...)
	later.Nodes[1].Valkey.Offset++
	if c, _ := Fingerprint(later); c == a {
		t.Fatal("an observation with another offset has the same fingerprint")
	}
}
