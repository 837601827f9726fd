package valkey

import "testing"

func TestHistoryIDMapsValkeysNullIDToNone(t *testing.T) {
	for in, want := range map[string]string{
		"0000000000000000000000000000000000000000": "",
		"": "",
		"70ad8e91c2a96be48b41edab5b9c48636a6b8cac": "70ad8e91c2a96be48b41edab5b9c48636a6b8cac",
		"0000000000000000000000000000000000000001": "0000000000000000000000000000000000000001",
	} {
		if got := historyID(in); got != want {
			t.Errorf("historyID(%q) = %q, want %q", in, got, want)
		}
	}
}
