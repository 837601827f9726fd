#!/usr/bin/env bash
# Builds helm once from the Go module proxy into the per-user cache (hack/cache-dir.sh) helm-<version>/ and runs it with
# the given arguments. `make demo` and the chart test install the operator's chart with it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=v3.22.0
bin_dir="$("$top/hack/cache-dir.sh")/helm-$version"
mkdir -p "$bin_dir"
exec 9>"$bin_dir/.lock"
flock 9
if [ ! -x "$bin_dir/helm" ]; then
  echo "building helm $version (once; cached in $bin_dir)" >&2
  GOBIN="$bin_dir" CGO_ENABLED=0 go install "helm.sh/helm/v3/cmd/helm@$version" >&2
fi
exec 9>&-
if [ "${1:-}" = "--path" ]; then
  echo "$bin_dir/helm"
  exit 0
fi
exec "$bin_dir/helm" "$@"
