package manager

import (
	"os"
	"runtime/debug"
	"strconv"
)

// memoryLimitShare is the part of the container's memory limit the Go runtime aims to stay
// under (its soft limit); the rest is room for what it does not count (thread stacks, the
// binary, memory it has freed but not yet returned).
const memoryLimitShare = 0.9

// SetMemoryLimit gives the Go runtime a soft memory limit from the container's, which the
// chart passes as CONTAINER_MEMORY_LIMIT (the Downward API's limits.memory, in bytes), so
// that the collector works harder as the operator nears its limit instead of the kernel
// killing it. GOMEMLIMIT, when set, wins (the runtime read it at start). It returns the limit
// set, or 0.
func SetMemoryLimit() int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return 0
	}
	limit, err := strconv.ParseInt(os.Getenv("CONTAINER_MEMORY_LIMIT"), 10, 64)
	if err != nil || limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft
}
