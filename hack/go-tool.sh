#!/usr/bin/env bash
# go-tool.sh NAME PACKAGE VERSION: builds a Go command once from the Go module proxy into the
# per-user cache (hack/cache-dir.sh) NAME-VERSION/ and prints the binary's path. A lock keeps two
# builds of the same tool (parallel test packages) from racing.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
name=$1 pkg=$2 version=$3
bin_dir="$("$top/hack/cache-dir.sh")/$name-$version"
mkdir -p "$bin_dir"
exec 9>"$bin_dir/.lock"
flock 9
if [ ! -x "$bin_dir/$name" ]; then
  echo "building $name $version (once; cached in $bin_dir)" >&2
  GOBIN="$bin_dir" CGO_ENABLED=0 go install "$pkg@$version" >&2
fi
echo "$bin_dir/$name"
