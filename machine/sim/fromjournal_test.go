package sim

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// A recorded run whose primary moved (a hang of the first primary: a failover) is continued
// by the simulator with the same shape and settings, its primary where the journal left it.
func TestSimulationStartsFromAJournal(t *testing.T) {
	topo := Topologies["replication-persistent"]
	s := New(topo, Options{Journal: true})
	op := Step{Kind: StepOperator}
	for i := 0; i < 40; i++ {
		s.Step(op)
	}
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultPause, Node: NodeRef{Primary: true}, Ticks: 10}})
	for i := 0; i < 60; i++ {
		s.Step(op)
	}
	s.Converge()
	recorded := s.State().Shards[0].Primary
	if recorded == nodeName(0, 0) {
		t.Fatalf("the recorded run did not move its primary: %s", recorded)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(s.Records()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := replay.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, desc, err := FromJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != topo.Mode || got.Shards != topo.Shards || got.Replicas != topo.Replicas || got.Persistence != topo.Persistence || got.MinSyncReplicas != topo.MinSyncReplicas || got.FailureThreshold != failureThreshold {
		t.Fatalf("topology %+v from the journal of %+v", got, topo)
	}
	if !strings.Contains(desc, "the primary of shard 0 at ordinal") || !strings.Contains(desc, "not carried over: the data") {
		t.Fatalf("the description does not say what is carried: %s", desc)
	}
	// Its start brings the simulated cluster to Steady with the recorded primary.
	c := New(got, Options{})
	for _, st := range got.Start {
		c.Step(st)
	}
	if st := c.State(); st.State != machine.Steady || st.Shards[0].Primary != recorded || len(c.Violations()) > 0 {
		t.Fatalf("after the start: %s with primary %s (recorded %s), violations %v", st.State, st.Shards[0].Primary, recorded, c.Violations())
	}
	// And random schedules run from there, as simulate --from-journal runs them.
	rep := Explore(ChaosConfig{Topologies: []Topology{got}, Seed: 1, Schedules: 5, Steps: 60})
	if !rep.OK() {
		var out bytes.Buffer
		rep.Write(&out)
		t.Fatalf("schedules from the journal's state failed:\n%s", out.String())
	}
	// The command.
	var out, errOut bytes.Buffer
	if code := Main([]string{"-from-journal", path, "-schedules", "2", "-steps", "30"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "starting from the journal of sim/replication-persistent, last state Steady") {
		t.Fatalf("simulate -from-journal: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if code := Main([]string{"-from-journal", filepath.Join(t.TempDir(), "none.json")}, &out, &errOut); code != 2 {
		t.Fatalf("a missing journal: exit %d", code)
	}
}

// A journal without observations cannot say the cluster's shape: a clear error.
func TestSimulationFromAJournalWithoutObservations(t *testing.T) {
	j := replay.Journal{Cluster: "a/b/c", Records: []replay.Record{{Kind: replay.KindBackfilled, Entry: machine.Entry{Seq: 1}}}}
	if _, _, err := FromJournal(j); err == nil || !strings.Contains(err.Error(), "holds no observation") {
		t.Fatalf("got %v", err)
	}
}
