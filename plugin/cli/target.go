package cli

import (
	"fmt"
	"slices"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// choosePod picks the pod of the session from what the operator last recorded: the primary
// (of shard in a Cluster topology), or with replica the most caught-up ready replica.
func choosePod(vc *v1beta1.ValkeyCluster, replica bool, shard int32) (string, error) {
	cluster := vc.Namespace + "/" + vc.Name
	sharded := vc.Spec.Topology == v1beta1.TopologyCluster
	if !sharded && shard != 0 {
		return "", fmt.Errorf("--shard is for topology Cluster; %s is %s", cluster, vc.Spec.Topology)
	}
	if replica && vc.Spec.Topology == v1beta1.TopologyStandalone {
		return "", fmt.Errorf("%s is Standalone: it has no replica", cluster)
	}
	if !replica {
		primary := vc.Status.Primary
		if sharded {
			primary = ""
			for _, s := range vc.Status.Shards {
				if s.Index == shard {
					primary = s.Primary
				}
			}
		}
		if primary == "" {
			return "", fmt.Errorf("%s has no primary recorded in status%s: kubectl valkey status %s says why (--pod names a pod)", cluster, shardText(sharded, shard), vc.Name)
		}
		return primary, nil
	}
	var replicas []v1beta1.NodeStatus
	for _, n := range vc.Status.Nodes {
		if n.Role == v1beta1.NodeRoleReplica && (!sharded || n.Shard == shard) {
			replicas = append(replicas, n)
		}
	}
	if len(replicas) == 0 {
		return "", fmt.Errorf("%s has no replica recorded in status%s: kubectl valkey status %s", cluster, shardText(sharded, shard), vc.Name)
	}
	// Ready first, then the least behind: the replica that answers what the primary would.
	slices.SortStableFunc(replicas, func(a, b v1beta1.NodeStatus) int {
		if a.Ready != b.Ready {
			if a.Ready {
				return -1
			}
			return 1
		}
		return int(min(max(a.Lag-b.Lag, -1), 1))
	})
	return replicas[0].Pod, nil
}

func shardText(sharded bool, shard int32) string {
	if !sharded {
		return ""
	}
	return fmt.Sprintf(" for shard %d", shard)
}
