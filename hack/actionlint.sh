#!/usr/bin/env bash
# Builds actionlint (the GitHub Actions workflow linter) once from the Go module proxy into the
# per-user cache (hack/go-tool.sh) and prints its path. The workflows in .github/workflows
# cannot run here; make lint-workflows checks them with it (syntax, expressions, action inputs,
# the shell of every run step when shellcheck is installed).
set -euo pipefail
exec "$(dirname "$0")/go-tool.sh" actionlint github.com/rhysd/actionlint/cmd/actionlint v1.7.12
