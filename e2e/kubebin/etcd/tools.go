//go:build tools

// Package etcd pins the etcd server built by the Makefile's kube-binaries target.
package etcd

import _ "go.etcd.io/etcd/server/v3"
