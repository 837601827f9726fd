// Package status is `kubectl valkey status NAME`: a ValkeyCluster's state, shape, nodes,
// conditions and last transitions on one screen, or its whole status as JSON or YAML.
//
// It only reads: everything shown is what the operator persisted in status, which is the
// state machine's own input, so the screen is what the operator will act on next.
package status
