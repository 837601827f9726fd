package machine

import (
	"fmt"
	"time"
)

// Fixtures for the machine's tests: a replication cluster "s0-0".."s0-N" described node by
// node, and helpers to move it along.

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func testSpec(replicas int) Spec {
	return Spec{Mode: ModeReplication, Shards: 1, Replicas: replicas, Revision: "r1", MinSyncReplicas: 1, FailureThreshold: 3, FenceTimeout: 10 * time.Second}
}

// node builds a reachable node of shard 0.
func node(ord int, role Role, replID string, offset int64) Node {
	return Node{
		Name: fmt.Sprintf("s0-%d", ord), Shard: 0, Ordinal: ord, Reachable: true,
		Pod:    Pod{Exists: true, Running: true, Ready: true, IP: fmt.Sprintf("10.0.0.%d", ord+1), Revision: "r1"},
		Valkey: Valkey{RunID: fmt.Sprintf("run-%d", ord), Role: role, ReplID: replID, Offset: offset, SecondOffset: -1, WritesFenced: role == RoleReplica, SyncFenced: role == RoleReplica},
	}
}

// primary is node 0 serving, open for writes, in history "h1".
func primary(offset int64) Node {
	n := node(0, RolePrimary, "h1", offset)
	n.Valkey.WritesFenced, n.Valkey.SyncFenced = false, false
	return n
}

// replica follows node 0 with the link up.
func replica(ord int, offset int64) Node {
	n := node(ord, RoleReplica, "h1", offset)
	n.Valkey.PrimaryHost, n.Valkey.LinkUp = "10.0.0.1", true
	return n
}

// unreachable makes a node unreachable for probes failed probes.
func unreachable(n Node, probes int) Node {
	n.Reachable, n.FailedProbes, n.Valkey = false, probes, Valkey{}
	n.Pod.Ready = false
	return n
}

// detached is a replica that follows nothing any more.
func detached(n Node) Node {
	n.Valkey.PrimaryHost, n.Valkey.LinkUp = "", false
	return n
}

// steadyState is the persisted state of a converged cluster led by s0-0 in history h1.
func steadyState() Persisted {
	return Persisted{State: Steady, Seq: 1, Since: at(0), Shards: []ShardRecord{{Primary: "s0-0", RunID: "run-0", History: History{ID: "h1"}, Epoch: 1}}}
}

func obsAt(sec int, spec Spec, nodes ...Node) Observation {
	return Observation{Time: at(sec), Spec: spec, Objects: Objects{Shards: spec.Shards, Replicas: spec.Replicas, Revision: spec.Revision, Sentinels: spec.Sentinels}, Nodes: nodes}
}

// actionsOf returns the actions of a kind, as strings.
func actionsOf(d Decision, kind string) []string {
	var out []string
	for _, a := range d.Actions {
		if a.Kind() == kind {
			out = append(out, a.String())
		}
	}
	return out
}
