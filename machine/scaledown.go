package machine

import (
	"fmt"
	"sort"
)

// The last checks before the objects shrink. The machine decides a scale-down on an
// observation; the actuator checks, right before it removes pods, that what it saw still
// holds: the world may have moved since (a person's FAILOVER TO, a primary restarted empty).
// The operator and the simulator both call CheckScaleDown, each with what its world can tell
// at the moment of acting, so a rule added here holds in both.

// ScaleDownPod is what the checks need to know of one pod, as its world tells it right before
// acting.
type ScaleDownPod struct {
	Name           string
	Shard, Ordinal int
	// Answers: its Valkey answers the operator. A pod that does not answer does not stop a
	// shrink (it cannot be asked), but does stop a shard's removal (it cannot be checked empty).
	Answers bool
	Role    Role
	// Joined: (cluster mode) on the cluster bus; KnowsPeers: it knows other nodes;
	// ServesSlots: it claims slots. Keys: the keys it holds.
	Joined, KnowsPeers, ServesSlots bool
	Keys                            int64
}

// ScaleDown is one EnsureObjects about to be carried out, and the world it is carried out in.
type ScaleDown struct {
	Action EnsureObjects
	Mode   Mode
	// Running is, per shard, how many pods its StatefulSet asks for now (absent: none).
	Running map[int]int
	Pods    []ScaleDownPod
	// Alive says whether a process the action keeps (its shard's recorded primary) is still
	// the one the decision saw; nil: every one is.
	Alive func(Proc) error
	// PodName names the pod at an ordinal of a shard (for a refusal about a pod nothing
	// observed); nil: "shard S ordinal O".
	PodName func(shard, ordinal int) string
}

// ScaleDownOf is the one way both worlds build CheckScaleDown's input: running is, per
// shard, how many pods its objects run now (every shard that has any, the ones the action
// removes included: their pods are checked empty), and nodes are the nodes as observed right
// before acting. Alive and PodName are the world's to add.
func ScaleDownOf(a EnsureObjects, mode Mode, running map[int]int, nodes []Node) ScaleDown {
	s := ScaleDown{Action: a, Mode: mode, Running: running}
	for _, n := range nodes {
		v := n.Valkey
		s.Pods = append(s.Pods, ScaleDownPod{
			Name: n.Name, Shard: n.Shard, Ordinal: n.Ordinal, Answers: n.Reachable, Role: v.Role,
			Joined: v.Joined, KnowsPeers: len(v.Known) > 0, ServesSlots: len(v.Slots) > 0, Keys: v.Keys,
		})
	}
	return s
}

// RemovedShard is a shard the action no longer wants, checked empty: its StatefulSet and
// claims may go.
type RemovedShard struct {
	Shard int
	Pods  int
}

// CheckScaleDown refuses an EnsureObjects that would remove a copy of something the machine
// did not plan to remove, and otherwise returns the shards it removes (by shard number).
//
//   - A kept shard shrinks over no pod that answers as a primary: the decision was taken when
//     it was a replica, and a person may have run FAILOVER TO since. A cluster-mode primary
//     that left the bus (remove-node reset it: no slot, no key) serves nothing and may go.
//   - A shard removed whole (its claims are deleted with it) has every pod answering, off the
//     bus, without slots and keys: one that cannot be checked is refused, and stays serving.
//   - Each process in Keep still runs: the pods a shrink removes may hold the only other
//     copies of the shard's writes, and a primary that restarted since the decision may have
//     come back empty.
//
// A stop (hibernation) keeps every claim and removes no copy: the shrink's check is not for it.
func CheckScaleDown(s ScaleDown) ([]RemovedShard, error) {
	a := s.Action
	stop := a.Replicas == StoppedReplicas
	want := a.Replicas + 1
	shrinks := false
	for sh := 0; sh < a.Shards; sh++ {
		if cur, ok := s.Running[sh]; ok && want < cur {
			shrinks = true
		}
	}
	if shrinks && !stop {
		for _, p := range s.Pods {
			cur, ok := s.Running[p.Shard]
			if !ok || p.Shard >= a.Shards || want >= cur || p.Ordinal < want {
				continue
			}
			offBus := s.Mode == ModeCluster && !p.Joined && !p.ServesSlots && p.Keys == 0
			if p.Answers && p.Role == RolePrimary && !offBus {
				return nil, fmt.Errorf("not shrinking shard %d to %d pods: %s, which would be removed, answers as a primary", p.Shard, want, p.Name)
			}
		}
	}
	removed, err := shardsRemoved(s)
	if err != nil {
		return nil, err
	}
	for _, k := range a.Keep {
		if s.Alive == nil {
			break
		}
		if err := s.Alive(k); err != nil {
			return nil, fmt.Errorf("not shrinking: recorded primary %s is not the process the decision saw: %w", k.Node, err)
		}
	}
	return removed, nil
}

// shardsRemoved checks every pod of the shards the action no longer wants.
func shardsRemoved(s ScaleDown) ([]RemovedShard, error) {
	var shards []int
	for sh := range s.Running {
		if sh >= s.Action.Shards {
			shards = append(shards, sh)
		}
	}
	sort.Ints(shards)
	var out []RemovedShard
	for _, sh := range shards {
		pods := s.Running[sh]
		for ord := 0; ord < pods; ord++ {
			pod, found := podAt(s.Pods, sh, ord)
			name := pod.Name
			if !found {
				name = fmt.Sprintf("shard %d ordinal %d", sh, ord)
				if s.PodName != nil {
					name = s.PodName(sh, ord)
				}
			}
			switch {
			case !found || !pod.Answers:
				return nil, fmt.Errorf("not removing shard %d: %s does not answer, so it cannot be checked empty (its claim would be deleted)", sh, name)
			case pod.Joined || pod.KnowsPeers || pod.ServesSlots:
				return nil, fmt.Errorf("not removing shard %d: %s is still in the cluster", sh, name)
			case pod.Keys > 0:
				return nil, fmt.Errorf("not removing shard %d: %s still holds %d keys", sh, name, pod.Keys)
			}
		}
		out = append(out, RemovedShard{Shard: sh, Pods: pods})
	}
	return out, nil
}

func podAt(pods []ScaleDownPod, shard, ordinal int) (ScaleDownPod, bool) {
	for _, p := range pods {
		if p.Shard == shard && p.Ordinal == ordinal {
			return p, true
		}
	}
	return ScaleDownPod{}, false
}
