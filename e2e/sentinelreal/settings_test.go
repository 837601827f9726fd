package sentinelreal

// Sentinel's timings on both sides: seconds, so that a scenario fits a test, and the model's
// ticks are seconds too.
const (
	downAfterSeconds       = 2
	failoverTimeoutSeconds = 6
)
