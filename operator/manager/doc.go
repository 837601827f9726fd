// Package manager wires the operator together: flags, the controller-runtime manager
// (leader election, metrics, health probes, namespace scope), the bbolt journal and its HTTP
// endpoint for `kubectl valkey history --full`, and the reconciler.
package manager
