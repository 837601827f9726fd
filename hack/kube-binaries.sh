#!/usr/bin/env bash
# Builds etcd and the Kubernetes control-plane binaries from the Go module proxy into
# .cache/bin/<name>-<version>/, and skips what is already there. Prints the directory.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
kube_version=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$top/e2e/kubebin/kube/go.mod")
etcd_version=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$top/e2e/kubebin/etcd/go.mod")
out="$top/.cache/bin/kube-$kube_version-etcd-$etcd_version"
mkdir -p "$out"
# Test packages run in parallel and may all ask at once: one builds, the others wait.
exec 9>"$out/.lock"
flock 9
build() { # module-dir package binary
  if [ -x "$out/$3" ]; then return; fi
  echo "building $3 (once; cached in $out)" >&2
  (cd "$top/e2e/kubebin/$1" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/$3.tmp" "$2") >&2
  mv "$out/$3.tmp" "$out/$3"
}
build etcd go.etcd.io/etcd/server/v3 etcd
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build kube k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager
build kube k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler
echo "$out"
