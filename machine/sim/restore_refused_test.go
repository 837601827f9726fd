package sim

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// refusedRestoreSchedule brings a cluster up, writes (acknowledged by WAIT), takes a backup,
// writes more, then asks for a restore of that backup whose files are replaced after the check
// (spoil: 1 refused before any node is touched, 2 after a node was emptied), and, from seed,
// plays tail random steps (faults, writes, user changes) after it.
func refusedRestoreSchedule(t Topology, spoil int, seed int64, tail int) []Step {
	var steps []Step
	op := func(n int) {
		for range n {
			steps = append(steps, Step{Kind: StepOperator})
		}
	}
	write := func(key int) { steps = append(steps, Step{Kind: StepWrite, Write: Write{Key: key, Wait: true}}) }
	op(40)
	for k := range 4 {
		write(k)
		op(2)
	}
	steps = append(steps, Step{Kind: StepUser, User: UserAction{Kind: UserBackup}})
	for k := 4; k < 8; k++ {
		write(k)
		op(2)
	}
	steps = append(steps, Step{Kind: StepUser, User: UserAction{Kind: UserRestore, To: spoil}})
	op(20)
	if tail > 0 {
		steps = append(steps, Generate(RandSource{rand.New(rand.NewSource(seed))}, t, tail)...)
	}
	return steps
}

// A restore whose files changed after the check: refused before any node was touched, the
// serving cluster is given back as it was (every acknowledged write still there, the property
// checks); refused after a cluster-mode node was emptied, it waits closed and is completed once
// the user puts the files back (Converge). A replication load cut off detaches its node under a
// new ID: its data is intact and the cluster is given back too.
func TestARefusedRestoreGivesBackOrWaits(t *testing.T) {
	givenBack := edgeName(machine.Restoring, machine.EventRestoreGivenBack, machine.Steady)
	completed := edgeName(machine.Restoring, machine.EventRestoreComplete, machine.Steady)
	cases := []struct {
		topology string
		spoil    int
		giveBack bool
	}{
		{"replication", 1, true},
		{"replication", 2, true},
		{"cluster", 1, true},
		{"cluster", 2, false},
	}
	for _, c := range cases {
		t.Run(c.topology+"/"+spoiledRestore[c.spoil], func(t *testing.T) {
			topo := Topologies[c.topology]
			res := Run(topo, refusedRestoreSchedule(topo, c.spoil, 0, 0), Options{Trace: true})
			for _, v := range res.Violations {
				t.Errorf("violation: %s", v)
			}
			if got := res.Stats.Edges[givenBack] > 0; got != c.giveBack {
				t.Errorf("given back: %v, want %v", got, c.giveBack)
			}
			if res.Stats.Edges[completed] == 0 {
				t.Errorf("the restore never completed once the files were put back")
			}
			if t.Failed() {
				t.Logf("history:\n  %s", strings.Join(res.Trace, "\n  "))
			}
		})
	}
}

// The same under random faults afterwards: no property fails; and a world whose emptying load
// keeps the node's replication ID (what the machine relies on to tell untouched data) is caught
// losing acknowledged writes, so the check above can fail.
func TestRefusedRestoresUnderFaults(t *testing.T) {
	schedules := 60
	if testing.Short() {
		schedules = 20
	}
	topo := Topologies["cluster"]
	caught := 0
	for seed := int64(1); seed <= int64(schedules); seed++ {
		schedule := refusedRestoreSchedule(topo, 1+int(seed%2), seed, 30)
		if res := Run(topo, schedule, Options{}); len(res.Violations) > 0 {
			res = Run(topo, schedule, Options{Trace: true})
			t.Fatalf("seed %d: %s\nhistory:\n  %s", seed, res.Violations[0], strings.Join(res.Trace, "\n  "))
		}
		if seed%2 == 1 { // spoiled after emptying
			if res := Run(topo, schedule, Options{Sabotage: SabotageEmptyKeepsID}); lostWrite(res.Violations) {
				caught++
			}
		}
	}
	if caught == 0 {
		t.Fatalf("sabotage %s went unnoticed in %d schedules", SabotageEmptyKeepsID, schedules/2)
	}
	t.Logf("sabotage %s caught in %d of %d schedules", SabotageEmptyKeepsID, caught, schedules/2)
}

func lostWrite(vs []Violation) bool {
	for _, v := range vs {
		if v.Kind == ViolationLostWrite {
			return true
		}
	}
	return false
}
