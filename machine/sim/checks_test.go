package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// A converged replication cluster with its operator, after a few writes.
func convergedSim(t *testing.T) *Sim {
	t.Helper()
	return convergedSimOf(t, "replication", 12)
}

// A cluster of the named topology with its operator, after steps operator turns.
func convergedSimOf(t *testing.T, topology string, steps int) *Sim {
	t.Helper()
	s := New(Topologies[topology], Options{Trace: true})
	for i := 0; i < steps; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	if st := s.State().State; st != machine.Steady {
		t.Fatalf("not Steady after bootstrap: %s\n%s", st, strings.Join(s.Trace(), "\n"))
	}
	return s
}

func hasViolation(s *Sim, kind ViolationKind, substr string) bool {
	for _, v := range s.Violations() {
		if v.Kind == kind && strings.Contains(v.Detail, substr) {
			return true
		}
	}
	return false
}

// The machine checks are honest: each reports a decision that breaks its rule.
func TestMachineChecksCatchBrokenDecisions(t *testing.T) {
	s := convergedSim(t)
	op := s.op
	obs := s.w.observe(map[string]int{})
	good := machine.Decide(op.status.Persisted, obs)
	if len(s.Violations()) > 0 {
		t.Fatalf("violations before tampering: %v", s.Violations())
	}

	notInTable := good
	notInTable.Transition = &machine.Transition{Seq: op.status.Persisted.Seq + 1, From: machine.Steady, To: machine.Rolling, Event: machine.EventPrimaryLost}
	notInTable.Next.State = machine.Rolling
	op.checkDecision(obs, notInTable)
	if !hasViolation(s, ViolationMachine, "not a table edge") {
		t.Error("a transition outside the table went unnoticed")
	}

	// A decision whose next state forgot which observation it consumed: re-delivering the
	// same observation lets the rollout start again.
	spec := obs.Spec
	spec.Revision = "r9"
	obs2 := obs
	obs2.Spec = spec
	obs2.Time = obs.Time.Add(time.Second)
	rollout := machine.Decide(op.status.Persisted, obs2)
	if rollout.Transition == nil || rollout.Transition.Event != machine.EventRolloutNeeded {
		t.Fatalf("want rollout-needed to tamper with, got %s", rollout)
	}
	amnesiac := rollout
	amnesiac.Next.State, amnesiac.Next.Op = machine.Steady, machine.Operation{}
	amnesiac.Next.Since = time.Time{}
	op.checkDecision(obs2, amnesiac)
	if !hasViolation(s, ViolationMachine, "re-delivered observation caused another transition") {
		t.Error("a machine that re-transitions on a re-delivered observation went unnoticed")
	}

	// A decision that does not follow from the persisted state (a machine with a memory of
	// its own): rebuilding from the stored state decides otherwise.
	hidden := good
	hidden.Actions = append(hidden.Actions, machine.Fence{Target: machine.Target{Node: "s0-1"}})
	op.checkDecision(obs, hidden)
	if !hasViolation(s, ViolationMachine, "rebuilt from the stored state decides differently") {
		t.Error("a decision that the persisted state does not explain went unnoticed")
	}
}

func TestPersistedChecksCatchBrokenStatus(t *testing.T) {
	s := convergedSim(t)
	op := s.op
	op.journal = op.journal[:len(op.journal)-1] // an entry lost
	op.checkJournal()
	if !hasViolation(s, ViolationMachine, "journal") {
		t.Error("a journal that does not fold to the live state went unnoticed")
	}
	s = convergedSim(t)
	s.op.journal[len(s.op.journal)-1].After.Shards[0].Primary = "someone-else" // an entry altered
	s.op.checkJournal()
	if !hasViolation(s, ViolationMachine, "journal folds to") {
		t.Error("a journal entry that disagrees with the status went unnoticed")
	}
	s = convergedSim(t)
	s.op.status.Conditions = machine.InitialConditions(timeOf(0)) // Bootstrapping True in Steady
	s.op.checkPersisted()
	if !hasViolation(s, ViolationMachine, "conditions") {
		t.Error("a wrong True condition went unnoticed")
	}
	s = convergedSim(t)
	s.op.status.History[0].Seq = 7
	s.op.checkPersisted()
	if !hasViolation(s, ViolationMachine, "history") {
		t.Error("a history that does not end at the state's sequence went unnoticed")
	}
}

// Liveness can fail: with a bound too short for a failover, Steady is not reached in time.
func TestLivenessCanFail(t *testing.T) {
	s := New(Topologies["replication"], Options{LivenessBound: 4})
	for i := 0; i < 12; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillPrimary, Node: NodeRef{Primary: true}}})
	s.Converge()
	if !hasViolation(s, ViolationLiveness, "not reached") {
		t.Fatalf("want a liveness violation, got %v", s.Violations())
	}
	// With the real bound the same failover converges.
	s = New(Topologies["replication"], Options{})
	for i := 0; i < 12; i++ {
		s.Step(Step{Kind: StepOperator})
	}
	s.Step(Step{Kind: StepFault, Fault: Fault{Kind: FaultKillPrimary, Node: NodeRef{Primary: true}}})
	s.Converge()
	if len(s.Violations()) > 0 || s.State().State != machine.Steady {
		t.Fatalf("failover did not converge: %v", s.Violations())
	}
}

// The forget-node check reports forgetting the ID of a node that runs, not an ID no node has.
func TestForgetCheckCatchesALiveNode(t *testing.T) {
	s := convergedSimOf(t, "cluster", 40)
	s.w.checkForget(machine.ForgetNode{ID: "no-such-node", IP: "10.0.0.99"})
	if vs := s.Violations(); len(vs) > 0 {
		t.Fatalf("forgetting an ID no node has was reported: %v", vs)
	}
	live := s.w.nodes[1]
	s.w.checkForget(machine.ForgetNode{ID: live.id, IP: live.ip})
	if !hasViolation(s, ViolationForgotLive, live.name) {
		t.Fatalf("forgetting %s's ID (%s) went unnoticed: %v", live.name, live.id, s.Violations())
	}
}
