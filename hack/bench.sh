#!/usr/bin/env bash
# make bench: runs every benchmark several times and prints one table per package with the
# median of each figure (benchstat). Figures that compare against a reference measured in the
# same run are reported as ratios by the benchmarks themselves (the machine is shared and
# noisy: read medians and ratios, not single runs).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
perf_version=v0.0.0-20260908200009-22c9c6c9d4da
benchstat="$("$top/hack/cache-dir.sh")/benchstat-$perf_version/benchstat"
if [ ! -x "$benchstat" ]; then
  echo "building benchstat (once; cached)" >&2
  GOBIN="$(dirname "$benchstat")" go install "golang.org/x/perf/cmd/benchstat@$perf_version"
fi
out="$top/.cache/bench"
mkdir -p "$out"
# Pure code: many iterations per run. End-to-end: each iteration is already a whole scenario.
go test -run '^$' -bench "${BENCH:-.}" -benchtime "${PURE_BENCHTIME:-1s}" -count "${PURE_COUNT:-6}" -timeout 30m ./machine/... | tee "$out/pure.txt"
go test -run '^$' -bench "${BENCH:-.}" -benchtime 1x -count "${E2E_COUNT:-3}" -timeout 120m $(go list ./... | grep -v '/machine') | tee "$out/e2e.txt"
echo
echo "==== medians over runs (benchstat) ===="
"$benchstat" "$out/pure.txt"
echo
"$benchstat" "$out/e2e.txt"
# The simulator's speed table in docs/development/simulation.md comes from this run (when it ran).
if grep -q '^BenchmarkExplore/' "$out/pure.txt"; then
  go run ./hack/simspeed -in "$out/pure.txt" -doc docs/development/simulation.md
  echo "docs/development/simulation.md: the simulator's speed table is this run's"
fi
# The figures the docs state (docs/measurements.json): each one whose benchmark ran takes this
# run's median, date and machine; the table in docs/measurements.md is rendered from them.
go run ./hack/benchtable -record "$out/pure.txt,$out/e2e.txt" -doc docs/measurements.md
echo "docs/measurements.json and docs/measurements.md: the figures of this run"
echo "raw results: $out/"
