// Package simulate is the simulate verb: random fault schedules against the state machine in
// a simulated world (machine/sim), the chaos simulation by hand. Its flags and report are
// machine/sim's (sim.Main): kubectl valkey simulate -h lists them.
package simulate
