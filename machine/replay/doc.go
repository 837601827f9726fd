// Package replay feeds a recorded journal back through the pure machine (machine.Decide):
// for every observation the journal kept, it decides again on the persisted state the journal
// says was current and compares with what was recorded (a determinism check users can run
// after an incident), or, with changed settings (more detection probes, another fence bound),
// runs the machine forward on its own decisions with the recorded observations as the world
// and reports where its decisions would have differed.
//
// Like the machine it is pure: no Kubernetes, no clock, no randomness. The operator's
// `kubectl valkey replay`, the plugin's `kubectl valkey history NAME --replay` and the tests
// that replay the simulator's and the end-to-end suite's journals all call Replay.
package replay
