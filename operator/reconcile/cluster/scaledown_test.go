package cluster

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// What a turn gives the scale-down's checks: each StatefulSet's pod count, and each node as
// it answered. A shard removed whole whose pod nothing observed is refused by the pod's name;
// a kept shard shrinks over no pod that answers as a primary.
func TestTheScaleDownChecksSeeTheTurnsWorld(t *testing.T) {
	set := func(name string, pods int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(pods)}}
	}
	node := func(shard, ord int, name string, role machine.Role) machine.Node {
		n := machine.Node{Name: name, Shard: shard, Ordinal: ord, Reachable: true}
		n.Valkey.Role = role
		return n
	}
	w := &world{sets: map[int]*appsv1.StatefulSet{0: set("c-0", 3), 1: set("c-1", 2)}}
	w.obs.Spec.Mode = machine.ModeCluster
	w.obs.Nodes = []machine.Node{
		node(0, 0, "c-0-0", machine.RolePrimary), node(0, 1, "c-0-1", machine.RoleReplica), node(0, 2, "c-0-2", machine.RoleReplica),
		node(1, 0, "c-1-0", machine.RolePrimary),
	}
	s := scaleDownOf(context.Background(), w, machine.EnsureObjects{Shards: 1, Replicas: 1})
	if s.Running[0] != 3 || s.Running[1] != 2 || len(s.Pods) != 4 {
		t.Fatalf("running %v, pods %+v", s.Running, s.Pods)
	}
	_, err := machine.CheckScaleDown(s)
	if err == nil || !strings.Contains(err.Error(), "not removing shard 1: c-1-1 does not answer") {
		t.Fatalf("shard 1's second pod was never observed: got %v", err)
	}
	w.obs.Nodes[2].Valkey.Role = machine.RolePrimary
	w.obs.Nodes[2].Valkey.Joined = true
	_, err = machine.CheckScaleDown(scaleDownOf(context.Background(), w, machine.EnsureObjects{Shards: 2, Replicas: 1}))
	if err == nil || !strings.Contains(err.Error(), "c-0-2, which would be removed, answers as a primary") {
		t.Fatalf("c-0-2 answers as a primary: got %v", err)
	}
}
