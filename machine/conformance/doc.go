// Package conformance is the actuator contract's table: (world before, action, expected
// effect) rows that run against both implementations of machine.Actuator, the simulated world
// (machine/sim) and the operator's real actuators on the local cluster with real Valkey
// (e2e/operatorsuite). A row the two disagree on is a simulator that drifted from what the
// operator really does, which would make every simulated proof about the wrong world.
//
// The package is pure like the machine: rows build their action from an observation (run
// ids, IPs) and judge the effect by observations, which both worlds produce the same way the
// machine sees them.
package conformance
