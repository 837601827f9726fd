package machine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The scale-down's last checks, as both worlds call them: a kept shard shrinks over no pod
// that answers as a primary, a removed shard is checked empty pod by pod, and every kept
// process is still the one the decision saw.

// threePods is one shard of three pods, s0-0 the primary, the others its replicas.
func threePods() []ScaleDownPod {
	return []ScaleDownPod{
		{Name: "s0-0", Shard: 0, Ordinal: 0, Answers: true, Role: RolePrimary, Keys: 5},
		{Name: "s0-1", Shard: 0, Ordinal: 1, Answers: true, Role: RoleReplica, Keys: 5},
		{Name: "s0-2", Shard: 0, Ordinal: 2, Answers: true, Role: RoleReplica, Keys: 5},
	}
}

func TestScaleDownRefusesToRemoveAPrimary(t *testing.T) {
	shrink := EnsureObjects{Shards: 1, Replicas: 1}
	pods := threePods()
	s := ScaleDown{Action: shrink, Mode: ModeReplication, Running: map[int]int{0: 3}, Pods: pods}
	if _, err := CheckScaleDown(s); err != nil {
		t.Fatalf("s0-2 is a replica: %v", err)
	}
	pods[2].Role = RolePrimary // a person ran FAILOVER TO s0-2 since the decision
	_, err := CheckScaleDown(s)
	if err == nil || !strings.Contains(err.Error(), "s0-2") {
		t.Fatalf("want the shrink over s0-2 refused, got %v", err)
	}
	// A pod that does not answer cannot be asked: it does not stop the shrink.
	pods[2].Answers = false
	if _, err := CheckScaleDown(s); err != nil {
		t.Fatalf("s0-2 does not answer: %v", err)
	}
	// A stop keeps every claim: no check.
	pods[2].Answers = true
	s.Action = EnsureObjects{Shards: 1, Replicas: StoppedReplicas}
	if _, err := CheckScaleDown(s); err != nil {
		t.Fatalf("a stop: %v", err)
	}
	// Growing, or keeping the count: no check either.
	s.Action = EnsureObjects{Shards: 1, Replicas: 2}
	if _, err := CheckScaleDown(s); err != nil {
		t.Fatalf("no shrink: %v", err)
	}
}

func TestScaleDownLetsAPrimaryOffTheBusGo(t *testing.T) {
	pods := threePods()
	pods[2] = ScaleDownPod{Name: "s0-2", Shard: 0, Ordinal: 2, Answers: true, Role: RolePrimary}
	s := ScaleDown{Action: EnsureObjects{Shards: 1, Replicas: 1}, Mode: ModeCluster, Running: map[int]int{0: 3}, Pods: pods}
	if _, err := CheckScaleDown(s); err != nil {
		t.Fatalf("s0-2 left the bus, holds nothing: %v", err)
	}
	for name, held := range map[string]func(*ScaleDownPod){
		"joined": func(p *ScaleDownPod) { p.Joined = true },
		"slots":  func(p *ScaleDownPod) { p.ServesSlots = true },
		"keys":   func(p *ScaleDownPod) { p.Keys = 1 },
	} {
		p := pods[2]
		held(&pods[2])
		if _, err := CheckScaleDown(s); err == nil {
			t.Errorf("%s: want the shrink refused", name)
		}
		pods[2] = p
	}
	// In a replication group there is no bus: an empty primary is still a primary.
	s.Mode = ModeReplication
	if _, err := CheckScaleDown(s); err == nil {
		t.Fatal("replication: want the shrink over a primary refused")
	}
}

func TestScaleDownChecksARemovedShardEmpty(t *testing.T) {
	empty := func(sh, ord int) ScaleDownPod {
		return ScaleDownPod{Name: shardPod(sh, ord), Shard: sh, Ordinal: ord, Answers: true, Role: RolePrimary}
	}
	s := ScaleDown{
		Action: EnsureObjects{Shards: 1, Replicas: 1}, Mode: ModeCluster,
		Running: map[int]int{0: 2, 1: 2, 2: 2},
		Pods:    []ScaleDownPod{empty(2, 1), empty(2, 0), empty(1, 0), empty(1, 1)},
	}
	removed, err := CheckScaleDown(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := []RemovedShard{{Shard: 1, Pods: 2}, {Shard: 2, Pods: 2}}; !reflect.DeepEqual(removed, want) {
		t.Fatalf("removed %+v, want %+v", removed, want)
	}
	for _, c := range []struct {
		name string
		held func(*ScaleDownPod)
		want string
	}{
		{"silent", func(p *ScaleDownPod) { p.Answers = false }, "s2-1 does not answer"},
		{"joined", func(p *ScaleDownPod) { p.Joined = true }, "s2-1 is still in the cluster"},
		{"knows", func(p *ScaleDownPod) { p.KnowsPeers = true }, "s2-1 is still in the cluster"},
		{"slots", func(p *ScaleDownPod) { p.ServesSlots = true }, "s2-1 is still in the cluster"},
		{"keys", func(p *ScaleDownPod) { p.Keys = 3 }, "s2-1 still holds 3 keys"},
	} {
		before := s.Pods[0]
		c.held(&s.Pods[0])
		if _, err := CheckScaleDown(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
		s.Pods[0] = before
	}
	// A pod nothing observed is one that cannot be checked.
	s.Pods = s.Pods[1:]
	s.PodName = shardPod
	if _, err := CheckScaleDown(s); err == nil || !strings.Contains(err.Error(), "s2-1 does not answer") {
		t.Errorf("unobserved: got %v", err)
	}
}

func TestScaleDownAsksEveryKeptProcess(t *testing.T) {
	keep := []Proc{{Node: "s0-0", RunID: "r0"}, {Node: "s1-0", RunID: "r1"}}
	var asked []Proc
	restarted := errors.New("runs r9")
	s := ScaleDown{
		Action: EnsureObjects{Shards: 2, Replicas: 0, Keep: keep}, Running: map[int]int{0: 2, 1: 2},
		Alive: func(k Proc) error {
			asked = append(asked, k)
			if k.Node == "s1-0" {
				return restarted
			}
			return nil
		},
	}
	_, err := CheckScaleDown(s)
	if !errors.Is(err, restarted) || !strings.Contains(err.Error(), "s1-0") {
		t.Fatalf("want the shrink refused for s1-0, got %v", err)
	}
	if !reflect.DeepEqual(asked, keep) {
		t.Fatalf("asked %v, want %v", asked, keep)
	}
}

func shardPod(shard, ordinal int) string {
	return fmt.Sprintf("s%d-%d", shard, ordinal)
}
