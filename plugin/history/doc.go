// Package history is `kubectl valkey history NAME`: a ValkeyCluster's state transitions,
// one line each.
//
// By default it prints status.history, the bounded list of recent transitions that the
// operator persists before it acts on each of them. --watch follows it as the operator
// appends. --full reads the operator's journal instead, which keeps every transition: the
// operator serves it as the aggregated API journal.valkey.fsm.dev, read through the API server
// with the user's own credentials and RBAC, page by page.
package history
