package cluster

import (
	"slices"
	"strconv"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// replicasNow is status.replicas, the scale subresource's current count: the replicas each
// primary has now, counted like spec.replicas (the pods of a shard but its primary), and with
// shards that differ the fewest, which is what a shard can lose. Pods that exist count, not
// the spec's number: while the machine holds a scale-down back, or a scale-up's pods are
// created, the count says what is there.
func replicasNow(nodes []machine.Node, shards int) int32 {
	if shards < 1 {
		return 0
	}
	pods := make([]int32, shards)
	for _, n := range nodes {
		if n.Pod.Exists && n.Shard >= 0 && n.Shard < shards {
			pods[n.Shard]++
		}
	}
	return max(slices.Min(pods)-1, 0)
}

// versionsSeen is status.valkeyVersion: the version every answering server reports (INFO
// server's valkey_version), or during a roll between versions every version seen,
// comma-separated, oldest first; "" when no server answered. A node that does not answer
// keeps no version: what it ran before is not known to be what it runs now.
func versionsSeen(nodes []machine.Node) string {
	var seen []string
	for _, n := range nodes {
		if n.Reachable && n.Valkey.Version != "" && !slices.Contains(seen, n.Valkey.Version) {
			seen = append(seen, n.Valkey.Version)
		}
	}
	slices.SortFunc(seen, compareVersions)
	return strings.Join(seen, ",")
}

// compareVersions orders dotted versions by their numbers ("8.0.2" before "9.1.0", "9.1.2"
// before "9.1.10"); a part that is not a number compares as text, after the numbers.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		switch {
		case errX == nil && errY == nil && x != y:
			if x < y {
				return -1
			}
			return 1
		case errX == nil && errY != nil:
			return -1
		case errX != nil && errY == nil:
			return 1
		case errX != nil && errY != nil && as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}
