// Command kubectl-valkey is the kubectl plugin of the valkey-operator: `kubectl valkey
// status NAME` and `kubectl valkey history NAME` show what the operator's state machine
// persisted for a ValkeyCluster. It only reads; the operator does the work.
//
// This package only wires the verbs (one package each, below it) under a root command that
// carries kubectl's connection flags.
package main
