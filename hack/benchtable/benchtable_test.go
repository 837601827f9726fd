package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bench run's output, as go test -bench prints it: two runs of one benchmark with its
// custom metrics, one of a benchmark no figure names, and a log line that starts like one.
const benchOutput = `goos: linux
cpu: Test CPU
BenchmarkUnplannedFailoverRTO-2   	       1	 1000 ns/op	 5.00 node-rto-p50-s	 1.30 node/sentinel-3s-p50
BenchmarkUnplannedFailoverRTO-2   	       1	 1000 ns/op	 4.00 node-rto-p50-s	 1.10 node/sentinel-3s-p50
BenchmarkUnplannedFailoverRTO-2   	       1	 1000 ns/op	 4.50 node-rto-p50-s	 1.20 node/sentinel-3s-p50
BenchmarkSomethingElse-2   	       1	 1000 ns/op
BenchmarkUnplannedFailoverRTO: a log line 7 node-rto-p50-s
`

const results = `{"about": "x", "figures": [
  {"id": "node-loss-rto", "figure": "RTO, node stopped", "benchmark": "BenchmarkUnplannedFailoverRTO",
   "metric": "node-rto-p50-s", "unit": "s p50", "value": 9.9, "goal": "p50 ≤ 3.0 s", "goalMax": 3.0,
   "ratio": {"metric": "node/sentinel-3s-p50", "value": 9.9, "of": "Sentinel", "goalMax": 0.75},
   "date": "2000-01-01", "machine": "old"},
  {"id": "replay", "figure": "replay", "benchmark": "BenchmarkReplay", "metric": "events/s",
   "unit": "events/s", "value": 137000, "goal": "≥ 100,000 events/s", "goalMin": 100000,
   "date": "2026-11-26", "machine": "2 cores"}
]}`

// TestRecordTakesTheMedianAndRendersTheTable: a bench run updates the figure whose benchmark
// ran (median value and ratio, the run's date and machine) and leaves the other as measured;
// the page's table between its markers is rendered from the file, the rest of the page kept.
func TestRecordTakesTheMedianAndRendersTheTable(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "measurements.json")
	out := filepath.Join(dir, "e2e.txt")
	doc := filepath.Join(dir, "measurements.md")
	for path, body := range map[string]string{res: results, out: benchOutput, doc: "# M\n\n" + begin + "\nstale\n" + end + "\n\nafter\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(res, doc, out); err != nil {
		t.Fatal(err)
	}
	set, err := load(res)
	if err != nil {
		t.Fatal(err)
	}
	node, replay := set.Figures[0], set.Figures[1]
	if node.Value != 4.5 || node.Ratio.Value != 1.2 || node.Date == "2000-01-01" || !strings.Contains(node.Machine, "Test CPU") {
		t.Errorf("node-loss-rto after the run = %+v (ratio %+v), want the median 4.5 and ratio 1.2 with the run's date and machine", node, node.Ratio)
	}
	if replay.Value != 137000 || replay.Date != "2026-11-26" || replay.Machine != "2 cores" {
		t.Errorf("replay, whose benchmark did not run, changed: %+v", replay)
	}
	page, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**4.5 s p50 (median of 3 runs)**", "1.2× Sentinel | not met", "**137,000 events/s** | ≥ 100,000 events/s |  | met | 2026-11-26 | 2 cores", "after\n"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(string(page), "stale") {
		t.Errorf("the old table stayed:\n%s", page)
	}
}

// TestTheCommittedTableIsTheResultsFile: docs/measurements.md shows what the results file
// holds (make verify-generate says the same in CI; this says it in go test).
func TestTheCommittedTableIsTheResultsFile(t *testing.T) {
	set, err := load("../../docs/measurements.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/measurements.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), begin+"\n"+set.render()+end) {
		t.Error("docs/measurements.md's table is not docs/measurements.json's: run make generate")
	}
}

// A figure may name one sub-benchmark (BenchmarkExplore/topology=all): it takes that sub's runs only,
// while a figure naming the top benchmark still takes every sub's.
func TestAFigureOfASubBenchmarkTakesOnlyItsRuns(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "pure.txt")
	body := `BenchmarkExplore/topology=all-2   	1	1 ns/op	 1000 schedules/s(all)
BenchmarkExplore/topology=all-2   	1	1 ns/op	 1200 schedules/s(all)
BenchmarkExplore/topology=all-2   	1	1 ns/op	 1100 schedules/s(all)
BenchmarkExplore/topology=cluster-2	1	1 ns/op	  600 schedules/s(all)
`
	if err := os.WriteFile(out, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, _, err := parseOutputs([]string{out})
	if err != nil {
		t.Fatal(err)
	}
	if got := median(runs["BenchmarkExplore/topology=all"]["schedules/s(all)"]); got != 1100 {
		t.Errorf("BenchmarkExplore/topology=all: median %v, want 1100 (its own three runs)", got)
	}
	if got := len(runs["BenchmarkExplore"]["schedules/s(all)"]); got != 4 {
		t.Errorf("BenchmarkExplore: %d runs, want all 4 of its subs", got)
	}
}
