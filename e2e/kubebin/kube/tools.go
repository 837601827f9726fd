//go:build tools

// Package kubebin pins the commands built by the Makefile's kube-binaries target (kubectl too,
// so that tests run the real client against the local cluster).
package kubebin

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
