package resp

import (
	"maps"
	"testing"
)

func TestFieldsReadsPairsAndNothingElse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply any
		want  map[string]string
	}{
		{"pairs", []any{"ip", "127.0.0.1", "port", "6379"}, map[string]string{"ip": "127.0.0.1", "port": "6379"}},
		{"a field without its value", []any{"ip", "127.0.0.1", "port"}, map[string]string{"ip": "127.0.0.1"}},
		{"not an array", "OK", map[string]string{}},
		{"a nested value", []any{"flags", []any{"master"}}, map[string]string{"flags": ""}},
	} {
		if got := Fields(tc.reply); !maps.Equal(got, tc.want) {
			t.Errorf("%s: Fields(%v) = %v, want %v", tc.name, tc.reply, got, tc.want)
		}
	}
}
