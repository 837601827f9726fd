// Package chaos plays random fault schedules against real processes: rapid draws schedules
// from a fixed menu of faults (the kinds of machine/sim, played on the local cluster instead of
// the simulated world), and each schedule runs against a Replication ValkeyCluster of three
// real valkey-server pods managed by the operator running in the test process, while a client
// writes through the client Service. After each schedule heals, the test checks that the
// cluster is Steady within 60 s with exactly one primary, that every WAIT-acknowledged write
// is still there, that every replica converges, and that the history explains every
// transition. See docs/development/chaos.md.
package chaos
