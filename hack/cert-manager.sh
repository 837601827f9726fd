#!/usr/bin/env bash
# cert-manager.sh [--crds]: builds cert-manager's controllers (hack/cert-manager, a module of its
# own) once from the Go module proxy into the per-user cache (hack/cache-dir.sh), next to a copy
# of the same release's CRDs, and prints the binary's path (--crds: the CRDs' directory). The
# local cluster runs the binary as the cluster's real cert-manager (e2e/localcluster
# StartCertManager).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src="$top/hack/cert-manager"
module=github.com/cert-manager/cert-manager
version=$(awk -v m="$module" '($1==m && $2 ~ /^v/) || ($1=="require" && $2==m) {print ($1==m ? $2 : $3)}' "$src/go.mod")
# The recipe (main.go and the module's pins) is part of the key, so that changing it rebuilds.
recipe=$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)
out="$("$top/hack/cache-dir.sh")/cert-manager-$version-$recipe"
mkdir -p "$out"
# Test packages run in parallel and may all ask at once: one builds, the others wait.
exec 9>"$out/.lock"
flock 9
if [ ! -x "$out/cert-manager-controllers" ]; then
  echo "building cert-manager $version controllers (once, about 2 minutes; cached in $out)" >&2
  (cd "$src" && CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X $module/pkg/util.AppVersion=$version" \
    -o "$out/cert-manager-controllers.tmp" .) >&2
  mv "$out/cert-manager-controllers.tmp" "$out/cert-manager-controllers"
fi
if [ ! -e "$out/crds/.complete" ]; then
  dir=$(cd "$src" && go mod download -json "$module@$version" | awk -F'"' '$2=="Dir" {print $4}')
  rm -rf "$out/crds.tmp" "$out/crds"
  mkdir "$out/crds.tmp"
  # The module cache is read-only; the copies need not be.
  for f in "$dir"/deploy/crds/*.yaml; do
    install -m 0644 "$f" "$out/crds.tmp/"
  done
  touch "$out/crds.tmp/.complete"
  mv "$out/crds.tmp" "$out/crds"
fi
if [ "${1:-}" = "--crds" ]; then
  echo "$out/crds"
else
  echo "$out/cert-manager-controllers"
fi
