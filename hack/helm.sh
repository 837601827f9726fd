#!/usr/bin/env bash
# Builds helm once from the Go module proxy into the per-user cache (hack/go-tool.sh) and runs it
# with the given arguments (--path: prints its path). `make demo` and the chart test install the
# operator's chart with it.
set -euo pipefail
helm=$("$(dirname "$0")/go-tool.sh" helm helm.sh/helm/v3/cmd/helm v3.22.0)
if [ "${1:-}" = "--path" ]; then
  echo "$helm"
  exit 0
fi
exec "$helm" "$@"
