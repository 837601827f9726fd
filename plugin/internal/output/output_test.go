package output

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, tb *Table, header bool) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	if header {
		_, err = tb.WriteTo(&b)
	} else {
		_, err = tb.WriteRowsTo(&b)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTableAlignsAroundSpanningLines(t *testing.T) {
	tb := NewTable("A", "BB", "C")
	tb.Row("1", "x", "first")
	tb.Span("   ... something in between ...")
	tb.Row("1000", "yyyy", "") // empty last cell: no trailing spaces
	tb.Row("2", "z\tw", "two\nlines")
	got := render(t, tb, true)
	want := "" +
		"A      BB     C\n" +
		"1      x      first\n" +
		"   ... something in between ...\n" +
		"1000   yyyy\n" +
		"2      z w    two lines\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if rows := render(t, tb, false); rows != strings.SplitN(want, "\n", 2)[1] {
		t.Errorf("rows without header:\n%s", rows)
	}
}

func TestTableMinWidths(t *testing.T) {
	tb := NewTable("A", "B", "C")
	tb.MinWidths(4, 6, 10) // the last column is never padded
	tb.Row("1", "2", "3")
	if got, want := render(t, tb, true), "A      B        C\n1      2        3\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTableRowCellCount(t *testing.T) {
	tb := NewTable("A", "B")
	tb.Row("only")
	tb.Row("x", "y", "dropped")
	if got := render(t, tb, true); strings.Contains(got, "dropped") || got != "A      B\nonly\nx      y\n" {
		t.Errorf("got %q", got)
	}
}

func TestFormatFlag(t *testing.T) {
	var f Format
	if f.String() != "text" {
		t.Errorf("zero format is %q, want text", f.String())
	}
	for _, s := range []string{"text", "json", "yaml"} {
		if err := f.Set(s); err != nil || string(f) != s {
			t.Errorf("Set(%q): %v, %q", s, err, f)
		}
	}
	if err := f.Set("wide"); err == nil || !strings.Contains(err.Error(), "text, json, yaml") {
		t.Errorf("Set(wide): %v", err)
	}
	if err := Encode(&bytes.Buffer{}, 1, Text); err == nil {
		t.Error("text is not an encoding, yet Encode accepted it")
	}
}

func TestEncode(t *testing.T) {
	v := map[string]any{"message": "a -> b", "seq": 3}
	var j, y bytes.Buffer
	if err := Encode(&j, v, JSON); err != nil {
		t.Fatal(err)
	}
	if err := Encode(&y, v, YAML); err != nil {
		t.Fatal(err)
	}
	if want := "{\n    \"message\": \"a -> b\",\n    \"seq\": 3\n}\n"; j.String() != want {
		t.Errorf("json %q, want %q", j.String(), want)
	}
	if want := "message: a -> b\nseq: 3\n"; y.String() != want {
		t.Errorf("yaml %q, want %q", y.String(), want)
	}
}

func TestAgeAndTimestamp(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "<unknown>"},
		{now.Add(-45 * time.Second), "45s"},
		{now.Add(-90 * time.Minute), "90m"},
		{now.Add(-50 * time.Hour), "2d2h"},
		{now.Add(3 * time.Second), "0s"}, // the operator's clock ahead of ours
	} {
		if got := Age(now, c.t); got != c.want {
			t.Errorf("Age(%v) = %q, want %q", now.Sub(c.t), got, c.want)
		}
	}
	paris := time.FixedZone("CET", 3600)
	if got := Timestamp(time.Date(2026, 3, 1, 13, 0, 0, 0, paris)); got != "2026-03-01T12:00:00Z" {
		t.Errorf("Timestamp in CET = %q, want UTC", got)
	}
	if got := Timestamp(time.Time{}); got != "<unknown>" {
		t.Errorf("zero Timestamp = %q", got)
	}
}
