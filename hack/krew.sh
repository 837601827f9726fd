#!/usr/bin/env bash
# Builds krew and its manifest validator (validate-krew-manifest) once from the Go module proxy
# into the per-user cache (hack/go-tool.sh) and prints their paths, one a line. make release
# and its test check the plugin's krew manifest with them: krew's own validation, then
# `krew install --manifest --archive` of every platform's archive, as a user's krew installs it.
set -euo pipefail
here=$(dirname "$0")
krew=$("$here/go-tool.sh" krew sigs.k8s.io/krew/cmd/krew v0.4.3)
validate=$("$here/go-tool.sh" validate-krew-manifest sigs.k8s.io/krew/cmd/validate-krew-manifest v0.4.3)
echo "$krew"
echo "$validate"
