#!/usr/bin/env bash
# Builds versitygw (an S3 gateway; its posix backend stores objects as files) once from the Go
# module proxy into the per-user cache (hack/go-tool.sh) and prints its path. The backup tests
# run it on a loopback address as the real S3 server.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" versitygw github.com/versity/versitygw/cmd/versitygw v1.8.0
