// Package machine is the pure state machine of one ValkeyCluster: states, events, the
// transition table, guards, Decide, the journal fold and the history records.
//
// It imports only the standard library and looplab/fsm: no Kubernetes, no valkey-go, no
// clock reads and no randomness, so every decision can be replayed and property-tested.
package machine
