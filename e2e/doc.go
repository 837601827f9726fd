// Package e2e holds the local cluster (a real Kubernetes control plane whose pods are real
// processes) and the end-to-end suites that run against it. Nothing imports e2e.
package e2e
