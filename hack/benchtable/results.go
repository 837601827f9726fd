package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Set is docs/measurements.json.
type Set struct {
	About   string   `json:"about"`
	Figures []Figure `json:"figures"`
}

// Figure is one measured figure. Value is in Unit; GoalMax/GoalMin, when set, say whether it
// is met (the text Goal is what the table shows). Ratio is the figure against a reference
// measured in the same run (or the goal), which is what a shared, noisy machine can compare.
type Figure struct {
	ID        string  `json:"id"`
	Figure    string  `json:"figure"`
	Benchmark string  `json:"benchmark"`
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Value     float64 `json:"value"`
	Goal      string  `json:"goal"`
	GoalMax   float64 `json:"goalMax,omitempty"`
	GoalMin   float64 `json:"goalMin,omitempty"`
	Ratio     *Ratio  `json:"ratio,omitempty"`
	Date      string  `json:"date"`
	Machine   string  `json:"machine"`
	Note      string  `json:"note,omitempty"`
}

// Ratio is a figure against a reference; GoalMax/GoalMin bound it like a Figure's.
type Ratio struct {
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	Of      string  `json:"of"`
	GoalMax float64 `json:"goalMax,omitempty"`
	GoalMin float64 `json:"goalMin,omitempty"`
}

func load(path string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Set
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, f := range s.Figures {
		if f.ID == "" || seen[f.ID] {
			return nil, fmt.Errorf("%s: figure id %q empty or repeated", path, f.ID)
		}
		seen[f.ID] = true
		if f.Benchmark == "" || f.Metric == "" || f.Date == "" || f.Machine == "" {
			return nil, fmt.Errorf("%s: figure %s lacks its benchmark, metric, date or machine", path, f.ID)
		}
	}
	return &s, nil
}

func (s *Set) save(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // goals read "≤ 250 ms", not \u003c escapes
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// record sets every figure whose benchmark and metric are in runs to the median of its runs,
// with date and machine, and returns the ids it updated. A figure whose benchmark did not run
// keeps its value, date and machine: the table says when each figure was measured.
func (s *Set) record(runs map[string]map[string][]float64, date, machine string) []string {
	var updated []string
	for i := range s.Figures {
		f := &s.Figures[i]
		vals := runs[f.Benchmark][f.Metric]
		if len(vals) == 0 {
			continue
		}
		f.Value = median(vals)
		f.Note = fmt.Sprintf("median of %d runs", len(vals))
		if f.Ratio != nil {
			if r := runs[f.Benchmark][f.Ratio.Metric]; len(r) > 0 {
				f.Ratio.Value = median(r)
			}
		}
		f.Date, f.Machine = date, machine
		updated = append(updated, f.ID)
	}
	return updated
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// met says whether v is within the bounds: "met", "not met", or "" without a bound.
func met(v, lo, hi float64) string {
	switch {
	case hi != 0 && v > hi, lo != 0 && v < lo:
		return "not met"
	case hi != 0 || lo != 0:
		return "met"
	}
	return ""
}

// verdict combines the figure's and its ratio's: not met when either is not.
func (f Figure) verdict() string {
	out := met(f.Value, f.GoalMin, f.GoalMax)
	if f.Ratio != nil {
		if r := met(f.Ratio.Value, f.Ratio.GoalMin, f.Ratio.GoalMax); r == "not met" || out == "" {
			out = r
		}
	}
	if out == "" {
		return "reported"
	}
	return out
}

// render is the Markdown table of every figure, in the file's order.
func (s *Set) render() string {
	var b strings.Builder
	b.WriteString("| figure | measured | goal | ratio | goal met | date | machine | benchmark |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, f := range s.Figures {
		ratio := ""
		if f.Ratio != nil {
			ratio = fmt.Sprintf("%s× %s", num(f.Ratio.Value), f.Ratio.Of)
		}
		measured := num(f.Value) + " " + f.Unit
		if f.Note != "" {
			measured += " (" + f.Note + ")"
		}
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>%s | **%s** | %s | %s | %s | %s | %s | `%s` `%s` |\n",
			f.ID, f.Figure, measured, f.Goal, ratio, f.verdict(), f.Date, f.Machine, f.Benchmark, f.Metric)
	}
	return b.String()
}

// num prints a figure with three significant digits at most, thousands grouped.
func num(v float64) string {
	if v >= 1000 {
		s := strconv.FormatFloat(v, 'f', 0, 64)
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		return string(out)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
