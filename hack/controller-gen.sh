#!/usr/bin/env bash
# Regenerates what controller-gen writes from apis/: the deepcopy functions
# (apis/*/zz_generated.deepcopy.go) and the CRDs of the Helm chart
# (charts/valkey-operator/files/crds/, which templates/crds.yaml installs with their conversion
# webhook filled in). `make generate` calls it and CI fails on drift, so both are
# only ever written here, never by hand.
#
# controller-gen is pinned and built once from the Go module proxy into
# the per-user cache (hack/cache-dir.sh) controller-gen-<version>/, outside the checkout; a different version writes different
# YAML, so the pin is what keeps every machine's output identical.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=v0.23.0
bin_dir="$("$top/hack/cache-dir.sh")/controller-gen-$version"
controller_gen="$bin_dir/controller-gen"
crd_dir="$top/charts/valkey-operator/files/crds"

mkdir -p "$bin_dir"
# Parallel callers (make -j, a test running the script) build it once: the others wait.
exec 9>"$bin_dir/.lock"
flock 9
if [ ! -x "$controller_gen" ]; then
  echo "building controller-gen $version (once; cached in $bin_dir)" >&2
  # go install with @version builds controller-gen against its own go.mod, so the project's
  # go.mod and go.sum are neither read nor changed.
  GOBIN="$bin_dir" go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$version"
fi

cd "$top"
# `controller-gen.sh crds PATHS DIR` writes only the CRDs of PATHS into DIR, for tests of a
# version alone (apis/v1beta1/celtest).
if [ "${1:-}" = crds ]; then
  exec "$controller_gen" crd paths="$2" output:crd:artifacts:config="$3"
fi
"$controller_gen" object paths=./apis/...
# controller-gen never deletes a CRD it no longer writes (a renamed kind or group): start
# from an empty directory so that such a file shows up as drift instead of lingering.
mkdir -p "$crd_dir"
rm -f "$crd_dir"/*.yaml
# Both versions, v1beta1 stored; spec.conversion (the operator's webhook, its CA) is not known
# here: the chart's templates/crds.yaml adds it, and tests add their own webhook's.
"$controller_gen" crd paths=./apis/... output:crd:artifacts:config="$crd_dir"
# The operator's RBAC rules, from the +kubebuilder:rbac markers of operator/reconcile/...; the
# chart's templates/rbac.yaml reads them (as a ClusterRole, or a Role with watchNamespace).
"$controller_gen" rbac:roleName=valkey-operator paths=./operator/... output:rbac:artifacts:config=charts/valkey-operator/files
