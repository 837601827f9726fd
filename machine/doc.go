// Package machine is the pure state machine of one ValkeyCluster: states, events, the
// transition table, guards, Decide, the journal fold and the history records.
//
// It imports only the standard library and looplab/fsm: no Kubernetes, no valkey-go, no
// clock reads and no randomness, so every decision can be replayed and property-tested.
//
// The operator calls [Decide] with the persisted state ([Persisted], stored in the
// ValkeyCluster status) and an [Observation] of the world. Decide returns a [Decision]: at
// most one [Transition] to persist before anything else, and the [Action] values the
// actuators then carry out. Everything here is plain data, so the same decisions can be
// journaled ([Entry], [Fold]), replayed and driven through a simulated world (package sim).
package machine
