package v1beta1

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxMemoryPercent is the share of the container's memory limit that maxmemory defaults to.
// The rest is headroom Valkey needs beyond its data set: the copy-on-write pages of a
// snapshot or AOF rewrite fork, replication and client output buffers, and allocator
// fragmentation. Above roughly two thirds a busy Durable primary gets OOM-killed while
// forking.
const MaxMemoryPercent = 60

// MaxMemoryBytes returns MaxMemoryPercent of a memory limit, in bytes, rounded down, and
// false when there is no limit (zero or negative), in which case Valkey gets no maxmemory.
func MaxMemoryBytes(limit resource.Quantity) (int64, bool) {
	v := limit.Value()
	if v <= 0 {
		return 0, false
	}
	// v*60/100 could overflow for limits near the int64 maximum; this cannot.
	return v/100*MaxMemoryPercent + v%100*MaxMemoryPercent/100, true
}

// MaxMemory returns the maxmemory directive's value for spec: config's maxmemory when set
// (in any letter case), else MaxMemoryPercent of the valkey container's memory limit in
// bytes. It returns false when neither is set, and then the operator writes no maxmemory.
func MaxMemory(spec *ValkeyClusterSpec) (string, bool) {
	if v, ok := LookupConfig(spec.Config, "maxmemory"); ok {
		return string(v), true
	}
	limit, ok := spec.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return "", false
	}
	n, ok := MaxMemoryBytes(limit)
	if !ok {
		return "", false
	}
	return strconv.FormatInt(n, 10), true
}
