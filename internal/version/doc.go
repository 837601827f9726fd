// Package version is the release and the commit a binary was built from, so that a user, a
// bug report and `kubectl valkey version` can name exactly what runs. Both are stamped at link
// time (make operator, make plugin, make image and the Dockerfile pass
//
//	-ldflags "-X github.com/valkey-fsm/valkey-operator/internal/version.Version=v0.3.0
//	          -X github.com/valkey-fsm/valkey-operator/internal/version.Commit=abc1234"
//
// ); a plain `go build` or `go run` still knows its commit from the VCS stamp the Go toolchain
// records, and calls its version "dev".
package version
