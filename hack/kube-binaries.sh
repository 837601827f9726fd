#!/usr/bin/env bash
# Builds etcd, the Kubernetes control-plane binaries and kubectl from the Go module proxy into
# the per-user cache (hack/cache-dir.sh) <name>-<version>/, and skips what is already there. Prints the directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$top/e2e/kubebin/kube/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$top/e2e/kubebin/etcd/go.mod")
# Bump the recipe number when the build itself changes, so that caches are rebuilt.
recipe=3
out="$("$top/hack/cache-dir.sh")/kube-$kube_version-etcd-$etcd_version-r$recipe"
mkdir -p "$out"
# Test packages run in parallel and may all ask at once: one builds, the others wait.
exec 9>"$out/.lock"
flock 9
# The version stamps Kubernetes' own build sets: without them the binaries report
# v0.0.0-master, and clients that check the server version (Helm's kubeVersion) refuse them.
minor=${kube_version#v1.}; minor=${minor%%.*}
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp="$stamp -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
build() { # module-dir package binary
  if [ -x "$out/$3" ]; then return; fi
  echo "building $3 (once; cached in $out)" >&2
  flags="-s -w"
  [ "$1" = kube ] && flags="$flags $stamp"
  (cd "$top/e2e/kubebin/$1" && CGO_ENABLED=0 go build -trimpath -ldflags="$flags" -o "$out/$3.tmp" "$2") >&2
  mv "$out/$3.tmp" "$out/$3"
}
build etcd go.etcd.io/etcd/server/v3 etcd
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build kube k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager
build kube k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler
# The real client, at the control plane's version, for tests of kubectl logs/exec/port-forward.
build kube k8s.io/kubernetes/cmd/kubectl kubectl
echo "$out"
