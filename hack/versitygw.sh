#!/usr/bin/env bash
# Builds versitygw (an S3 gateway; its posix backend stores objects as files) once from the Go
# module proxy into the per-user cache (hack/cache-dir.sh) versitygw-<version>/ and prints its
# path. The backup tests run it on a loopback address as the real S3 server.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=v1.8.0
bin_dir="$("$top/hack/cache-dir.sh")/versitygw-$version"
mkdir -p "$bin_dir"
exec 9>"$bin_dir/.lock"
flock 9
if [ ! -x "$bin_dir/versitygw" ]; then
  echo "building versitygw $version (once; cached in $bin_dir)" >&2
  GOBIN="$bin_dir" CGO_ENABLED=0 GOFLAGS=-mod=mod go install "github.com/versity/versitygw/cmd/versitygw@$version" >&2
fi
echo "$bin_dir/versitygw"
