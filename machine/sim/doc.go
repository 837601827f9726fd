// Package sim is a simulated world for the machine: Valkey nodes (data as a log of writes,
// replication IDs and offsets, replication links with lag, roles, fencing, slots,
// persistence, and in cluster mode the bus as nodes.conf keeps it: node IDs and ghosts, slot
// claims, addresses and links), pods (IPs that change, restarts, empty restarts), network partitions, a
// client that records which writes were acknowledged (plainly or by WAIT), and an operator
// that observes, decides with machine.Decide, persists and acts, and that may crash between
// any two steps or meet API conflicts and failing or slow actuators.
//
// Faults are plain data (Fault), and so are whole schedules ([]Step), so that the end-to-end
// chaos suite can play the same schedules against real processes. The safety properties are
// checked in the world after every step (invariants.go); the machine's own invariants
// (table, conditions, history, journal, determinism) after every decision (checks.go).
//
// The package imports the machine, the standard library and, in tests only, rapid. It never
// imports Kubernetes or valkey-go: the world is a model, and its assumptions are written next
// to the code that makes them.
package sim
