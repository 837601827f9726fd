// Package history is `kubectl valkey history NAME`: a ValkeyCluster's state transitions,
// one line each.
//
// By default it prints status.history, the bounded list of recent transitions that the
// operator persists before it acts on each of them. --watch follows it as the operator
// appends. --full reads the operator's journal instead, which keeps every transition; it is
// served by the operator over HTTP (GET /journal/{namespace}/{name} on port 8082), either
// at --operator-url or on the operator's Ready pods, dialled directly, the leader's first.
package history
