//go:build race

package machine

// raceDetector: the race detector's sync.Pool drops a quarter of what is put back, on purpose,
// so pooled memory is not reused and allocation counts say nothing.
const raceDetector = true
