package machine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Clone is what storage through JSON gives back, and shares nothing with the original: on
// random values of every field, so that a field added later with a slice, map or pointer
// that Clone does not copy fails here (the generator refuses kinds it does not know).
func TestCloneIsTheJSONRoundTrip(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var p Persisted
		fill(rt, reflect.ValueOf(&p).Elem(), "p")
		raw, err := json.Marshal(p)
		if err != nil {
			rt.Fatal(err)
		}
		var stored Persisted
		if err := json.Unmarshal(raw, &stored); err != nil {
			rt.Fatal(err)
		}
		c := p.Clone()
		if !reflect.DeepEqual(c, stored) {
			rt.Fatalf("Clone differs from the JSON round trip:\n%+v\n%+v", c, stored)
		}
		// Overwrite everything the copy reaches, in place: the original must not change.
		fill(rt, reflect.ValueOf(&c).Elem(), "clone")
		if !reflect.DeepEqual(p, stored) {
			rt.Fatalf("changing the clone changed the original:\n%+v\n%+v", p, stored)
		}
	})
}

// fill draws a value for every field v reaches. A slice, map or pointer that already holds
// something keeps its memory and has its elements drawn again (so a second fill scribbles over
// what a shallow copy would share); a nil one becomes nil, empty or a few new elements.
func fill(rt *rapid.T, v reflect.Value, path string) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		// JSON keeps a time to the nanosecond, not its monotonic reading or location: the
		// machine's times are UTC observation times.
		v.Set(reflect.ValueOf(time.Unix(rapid.Int64Range(0, 1<<33).Draw(rt, path+".s"), rapid.Int64Range(0, 999999999).Draw(rt, path+".ns")).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(rapid.SampledFrom([]string{"", "a", "s0-1", "Steady"}).Draw(rt, path))
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(rt, path))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(rapid.Int64Range(-3, 1<<40).Draw(rt, path))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rapid.Uint64Range(0, 1<<40).Draw(rt, path))
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				rt.Fatalf("%s.%s is unexported: JSON drops it, Clone would not", path, f.Name)
			}
			fill(rt, v.Field(i), path+"."+f.Name)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(rt, v.Index(i), path+"[]")
		}
	case reflect.Slice:
		if v.IsNil() {
			switch n := rapid.IntRange(-1, 3).Draw(rt, path+" len"); n {
			case -1:
				return
			default:
				v.Set(reflect.MakeSlice(v.Type(), n, n))
			}
		}
		for i := range v.Len() {
			fill(rt, v.Index(i), path+"[]")
		}
	case reflect.Map:
		if v.IsNil() {
			if rapid.Bool().Draw(rt, path+" nil") {
				return
			}
			v.Set(reflect.MakeMap(v.Type()))
			for range rapid.IntRange(0, 3).Draw(rt, path+" len") {
				k := reflect.New(v.Type().Key()).Elem()
				fill(rt, k, path+" key")
				v.SetMapIndex(k, reflect.New(v.Type().Elem()).Elem())
			}
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			fill(rt, e, path+"[k]")
			v.SetMapIndex(k, e)
		}
	case reflect.Pointer:
		if v.IsNil() {
			if rapid.Bool().Draw(rt, path+" nil") {
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(rt, v.Elem(), path+"*")
	default:
		rt.Fatalf("%s: no generator for kind %s (extend fill)", path, v.Kind())
	}
}
