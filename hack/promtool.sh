#!/usr/bin/env bash
# Builds promtool (Prometheus's rule checker and unit tester) once from the Go module proxy
# into the per-user cache (hack/go-tool.sh) and prints its path. The alerting rules of the
# operator chart are tested with it (internal/monitoring).
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" promtool github.com/prometheus/prometheus/cmd/promtool v0.316.0
