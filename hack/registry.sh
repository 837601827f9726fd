#!/usr/bin/env bash
# Builds the CNCF distribution registry (the registry behind Docker Hub, GHCR's protocol) once
# from the Go module proxy into the per-user cache (hack/go-tool.sh) and prints its path. The
# release's test pushes the image and the charts to it on loopback and pulls them back with
# helm, as users pull them from ghcr.io.
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" registry github.com/distribution/distribution/v3/cmd/registry v3.1.2
