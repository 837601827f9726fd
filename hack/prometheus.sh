#!/usr/bin/env bash
# Builds the Prometheus server once from the Go module proxy into the per-user cache
# (hack/go-tool.sh) and prints its path: the same release as promtool (hack/promtool.sh). The
# local cluster runs it as a pod (Prometheus's image maps to it) to scrape the operator
# through Kubernetes service discovery and evaluate the chart's alerting rules
# (e2e/operatorsuite/prometheus_test.go). Built without the web UI's assets (the builtinassets
# tag needs the UI built with npm): the API, which the tests use, is all there.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" prometheus github.com/prometheus/prometheus/cmd/prometheus v0.316.0
