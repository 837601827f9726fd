package manager

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTheRuntimeMemoryLimitFollowsTheContainers(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("CONTAINER_MEMORY_LIMIT", "536870912")
	if got := SetMemoryLimit(); got != 483183820 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("soft limit %d (runtime %d), want 90%% of 512 MiB", got, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := SetMemoryLimit(); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("GOMEMLIMIT set: the container's limit must not replace it (set %d)", got)
	}
}
