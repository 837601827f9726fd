package machine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Random, mostly nonsensical, persisted states and observations: whatever the input, Decide
// must keep its contract. (The meaningful sequences are driven by the simulator in sim.)

var histories = []string{"", "h1", "h2", "h3"}

func genNode(t *rapid.T, ord int) Node {
	n := Node{
		Name: fmt.Sprintf("s0-%d", ord), Shard: 0, Ordinal: ord,
		Pod:       Pod{Exists: rapid.Bool().Draw(t, "exists"), Running: rapid.Bool().Draw(t, "running"), IP: fmt.Sprintf("10.0.0.%d", ord+1), Revision: rapid.SampledFrom([]string{"r1", "r2"}).Draw(t, "rev")},
		Reachable: rapid.Bool().Draw(t, "reachable"),
	}
	if !n.Reachable {
		n.FailedProbes = rapid.IntRange(0, 5).Draw(t, "probes")
		return n
	}
	n.Valkey = Valkey{
		RunID:        fmt.Sprintf("run-%d-%d", ord, rapid.IntRange(0, 1).Draw(t, "run")),
		Role:         rapid.SampledFrom([]Role{RolePrimary, RoleReplica}).Draw(t, "role"),
		ReplID:       rapid.SampledFrom(histories[1:]).Draw(t, "replid"),
		ReplID2:      rapid.SampledFrom(histories).Draw(t, "replid2"),
		Offset:       int64(rapid.IntRange(0, 6).Draw(t, "offset")),
		SecondOffset: int64(rapid.IntRange(-1, 6).Draw(t, "second")),
		PrimaryHost:  rapid.SampledFrom([]string{"", "10.0.0.1", "10.0.0.2", "10.0.0.3"}).Draw(t, "host"),
		LinkUp:       rapid.Bool().Draw(t, "link"),
		Loading:      rapid.IntRange(0, 9).Draw(t, "loading") == 0,
		WritesFenced: rapid.Bool().Draw(t, "wfence"),
		SyncFenced:   rapid.Bool().Draw(t, "sfence"),
	}
	return n
}

func genCase(t *rapid.T) (Persisted, Observation) {
	replicas := rapid.IntRange(0, 3).Draw(t, "replicas")
	spec := testSpec(replicas)
	spec.Revision = rapid.SampledFrom([]string{"r1", "r2"}).Draw(t, "spec-rev")
	if rapid.Bool().Draw(t, "switchover") {
		spec.Switchover = &Switchover{To: fmt.Sprintf("s0-%d", rapid.IntRange(0, replicas).Draw(t, "to"))}
	}
	// What the objects ask for may differ from the spec (a scale in progress).
	objReplicas := rapid.IntRange(0, 3).Draw(t, "object-replicas")
	var nodes []Node
	for o := 0; o <= max(replicas, objReplicas); o++ {
		if rapid.IntRange(0, 5).Draw(t, "missing") > 0 {
			nodes = append(nodes, genNode(t, o))
		}
	}
	p := Persisted{}
	if rapid.Bool().Draw(t, "started") {
		p.State = rapid.SampledFrom(States()).Draw(t, "state")
		p.Seq = uint64(rapid.IntRange(1, 9).Draw(t, "seq"))
		p.Since = at(0)
		prim := fmt.Sprintf("s0-%d", rapid.IntRange(0, max(replicas, objReplicas)).Draw(t, "prim"))
		runs := []string{prim + "-run", fmt.Sprintf("run-%s-0", prim[len("s0-"):])}
		p.Shards = []ShardRecord{{Primary: prim, RunID: rapid.SampledFrom(runs).Draw(t, "rec-run"), History: History{ID: rapid.SampledFrom(histories[1:]).Draw(t, "rec-h")}, Epoch: 1}}
		p.PodsPerShard = rapid.IntRange(0, 4).Draw(t, "pods-per-shard")
		if p.State == FailingOver {
			p.Op = Operation{Election: Election{Lost: prim, LostRunID: "old", LostHistory: p.Shards[0].History, Writer: prim, Planned: rapid.Bool().Draw(t, "planned")}}
			if rapid.Bool().Draw(t, "elected") {
				p.Op.Election.Candidate = prim
			}
			if p.Op.Election.Planned && rapid.Bool().Draw(t, "scale-down") {
				p.Op.Switchover.To = fmt.Sprintf("s0-%d", rapid.IntRange(0, 3).Draw(t, "target"))
				p.Op.HandOver.To, p.Op.Switchover.Pods = p.Op.Switchover.To, max(1, p.PodsPerShard)
			}
		}
		if p.State == Rolling {
			p.Op.Roll.Revision = "r2"
		}
	}
	obs := obsAt(rapid.IntRange(1, 30).Draw(t, "time"), spec, nodes...)
	obs.Objects.Replicas = objReplicas
	return p, obs
}

func TestDecideContract(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, obs := genCase(t)
		d := Decide(p, obs)
		state := p.State
		if state == "" {
			state = Bootstrapping
		}
		if tr := d.Transition; tr != nil {
			if !InTable(*tr) || tr.From != state || tr.To != d.Next.State || tr.Seq != p.Seq+1 || !d.Next.Since.Equal(obs.Time) {
				t.Fatalf("transition %s from %s #%d is not a table edge taken from there", tr, state, p.Seq)
			}
		} else if !reflect.DeepEqual(d.Next, withState(p, state)) {
			t.Fatalf("no transition but the persisted state changed: %+v -> %+v", p, d.Next)
		}
		// Re-delivering the same observation: no transition, the same actions.
		again := Decide(d.Next, obs)
		if again.Transition != nil || !reflect.DeepEqual(again.Actions, d.Actions) {
			t.Fatalf("re-delivery: %s then %s", d, again)
		}
		// Stored through JSON (as in the status) and read back: the same decision.
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var stored Persisted
		if err := json.Unmarshal(raw, &stored); err != nil {
			t.Fatal(err)
		}
		if rebuilt := Decide(stored, obs); rebuilt.String() != d.String() {
			t.Fatalf("rebuilt from JSON: %s vs %s", rebuilt, d)
		}
		checkActionTargets(t, d, obs)
	})
}

func withState(p Persisted, s State) Persisted { p.State = s; return p }

// checkActionTargets: every action aimed at a process names one observed now, only the
// recorded primary is ever opened for writes, and the objects never stop asking for the pod
// of a recorded primary of a shard they keep.
func checkActionTargets(t *rapid.T, d Decision, obs Observation) {
	for _, a := range d.Actions {
		e, ok := a.(EnsureObjects)
		if !ok {
			continue
		}
		for s, rec := range d.Next.Shards {
			for _, n := range obs.Nodes {
				if s < e.Shards && n.Name == rec.Primary && n.Ordinal <= obs.Objects.Replicas && n.Ordinal > e.Replicas {
					t.Fatalf("%s removes the pod of %s, the recorded primary of shard %d", e, n.Name, s)
				}
			}
		}
	}
	find := func(name, run string) bool {
		for _, n := range obs.Nodes {
			if n.Name == name && n.Reachable && n.Valkey.RunID == run {
				return true
			}
		}
		return false
	}
	for _, a := range d.Actions {
		var name, run string
		switch a := a.(type) {
		case Promote:
			name, run = a.Node, a.RunID
		case Detach:
			name, run = a.Node, a.RunID
		case Fence:
			name, run = a.Node, a.RunID
		case ReplicaOf:
			name, run = a.Node, a.RunID
		case OpenWrites:
			name, run = a.Node, a.RunID
			if len(d.Next.Shards) <= a.Shard || d.Next.Shards[a.Shard].Primary != a.Node || d.Next.Shards[a.Shard].RunID != a.RunID {
				t.Fatalf("%s opens a node that is not the recorded primary (%+v)", a, d.Next.Shards)
			}
			if d.Next.State != Steady && d.Next.State != Rolling && d.Next.State != Resharding {
				t.Fatalf("%s in %s: writes are opened only in Steady, Rolling and Resharding", a, d.Next.State)
			}
		default:
			continue
		}
		if !find(name, run) {
			t.Fatalf("%s is aimed at a process not observed now", a)
		}
	}
}

func TestDecideIsFarUnderAMillisecond(t *testing.T) {
	cases := benchCases()
	start := time.Now()
	const n = 3000
	for i := 0; i < n; i++ {
		c := cases[i%len(cases)]
		Decide(c.p, c.obs)
	}
	if per := time.Since(start) / n; per > time.Millisecond {
		t.Fatalf("Decide takes %s", per)
	}
}
