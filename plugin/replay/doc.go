// Package replay is the replay verb: a recorded journal fed back through the state machine
// (machine/replay), as a determinism check or a what-if with --set. Its flags and report are
// machine/replay's (replay.Main); history --replay runs the same code on a cluster's journal.
package replay
