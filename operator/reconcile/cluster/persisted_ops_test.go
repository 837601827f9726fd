package cluster

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

var recordOperations = flag.Bool("record-operations", false, "rewrite testdata/operations from the code under test")

// operationKinds is one operation of each kind the machine records, with the fields its
// guards set (failover.go, steady.go, leaving.go, scaling.go, rolling.go, resharding.go,
// restoring.go, bootstrap.go, hibernation.go).
func operationKinds() map[string]machine.Operation {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890_000_000, time.UTC)
	lost := machine.History{ID: "h-lost", PrevID: "h-before", PrevEnd: 1200}
	return map[string]machine.Operation{
		"failover":             {Election: machine.Election{Shard: 1, Lost: "c-s1-0", LostRunID: "run-0", LostHistory: lost, Writer: "c-s1-0", WriterRunID: "run-0", Candidate: "c-s1-1", Unpromoted: true, ElectedAt: at, ElectedClock: "clock-a", FenceFrom: at.Add(-time.Second), KnownFenced: true, Preempted: machine.Rolling}, HandOver: machine.HandOverMark{Shard: 1, To: "c-s1-2"}},
		"failover-reseed":      {Election: machine.Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", Writer: "c-0", WriterRunID: "run-0", Candidate: "c-1", ElectedAt: at, ElectedClock: "clock-a", Reseed: true}},
		"sentinel-take-over":   {Election: machine.Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", LostHistory: lost, Writer: "c-0", WriterRunID: "run-0", Candidate: "c-1", ElectedAt: at, ElectedClock: "clock-a", TakenOver: true}},
		"switchover":           {Election: machine.Election{Shard: 2, Lost: "c-s2-0", LostRunID: "run-0", LostHistory: lost, Planned: true}, Switchover: machine.SwitchoverGoal{To: "c-s2-1"}, HandOver: machine.HandOverMark{Shard: 2, To: "c-s2-1"}},
		"primary-leaving":      {Election: machine.Election{Shard: 0, Lost: "c-0", LostRunID: "run-0", LostHistory: lost, Planned: true}, Switchover: machine.SwitchoverGoal{To: "c-1", Leaving: true}, HandOver: machine.HandOverMark{Shard: 0, To: "c-1"}},
		"scale-down-hand-over": {Election: machine.Election{Shard: 0, Lost: "c-2", LostRunID: "run-2", LostHistory: lost, Planned: true}, Switchover: machine.SwitchoverGoal{To: "c-0", Pods: 2}, HandOver: machine.HandOverMark{Shard: 0, To: "c-0"}},
		"rolling":              {Roll: machine.Roll{Revision: "rev-2"}, HandOver: machine.HandOverMark{Shard: 1, To: "c-s1-1"}},
		"resharding":           {Reshard: machine.Reshard{Shards: 4}},
		"restore":              {Restore: machine.Restore{Request: "backup/nightly", Snapshot: "s3://b/ns/c/nightly", GiveBack: true}},
		"restore-at-bootstrap": {Restore: machine.Restore{Request: "backup/nightly", Snapshot: "s3://b/ns/c/nightly"}},
		"hibernated":           {Hibernation: machine.Hibernation{From: "c-s0-0 - c-s2-1"}},
		"waking":               {Hibernation: machine.Hibernation{Wake: true, From: "c-s0-0 - c-s2-1"}},
		"none":                 {},
	}
}

// operationStates is the state each kind of operation is recorded in: the state says which
// operation a status record is about (its target field means something per kind).
var operationStates = map[string]machine.State{
	"failover": machine.FailingOver, "failover-reseed": machine.FailingOver, "switchover": machine.FailingOver,
	"primary-leaving": machine.FailingOver, "scale-down-hand-over": machine.FailingOver, "rolling": machine.Rolling,
	"resharding": machine.Resharding, "restore": machine.Restoring, "restore-at-bootstrap": machine.Restoring,
	"hibernated": machine.Hibernated, "waking": machine.Bootstrapping, "none": machine.Steady,
	"sentinel-take-over": machine.FailingOver,
}

// Every kind of operation survives the status: what today's operator writes
// (testdata/operations, recorded with -record-operations) reads back as the same operation, and
// the operation is written as the same record. A change of the machine's Operation that the
// conversion does not follow, or that changes the record users' clusters hold, fails here.
func TestEveryOperationKindSurvivesTheStatus(t *testing.T) {
	for kind, op := range operationKinds() {
		path := filepath.Join("testdata", "operations", kind+".json")
		state, ok := operationStates[kind]
		if !ok {
			t.Fatalf("%s: no state for the kind", kind)
		}
		p := machine.Persisted{State: state, Op: op}
		written, err := json.MarshalIndent(machineStatusOf(p).Operation, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, '\n')
		if *recordOperations {
			if err := os.WriteFile(path, written, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (record it with -record-operations)", kind, err)
		}
		if !bytes.Equal(written, golden) {
			t.Errorf("%s: written as\n%s\nwant today's record\n%s", kind, written, golden)
		}
		var rec *v1beta1.OperationRecord
		if err := json.Unmarshal(golden, &rec); err != nil {
			t.Fatal(err)
		}
		st := v1beta1.ValkeyClusterStatus{State: v1beta1.State(state), Machine: &v1beta1.MachineStatus{Operation: rec}}
		if got := persistedOf(&st).Op; !reflect.DeepEqual(got, op) {
			t.Errorf("%s: read back as\n%+v\nwant\n%+v", kind, got, op)
		}
	}
}
