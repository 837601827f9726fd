// Package journal is the operator's bbolt event journal: every transition of every cluster,
// unbounded, keyed per cluster by big-endian sequence number. Kubernetes status is
// authoritative; the journal serves `kubectl valkey history --full`, audits and deterministic
// replay into the simulator. A new leader whose journal lacks a cluster's early history
// backfills it from status.history and records the gap it cannot fill.
package journal
