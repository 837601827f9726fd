package machine

import (
	"strings"
	"testing"
	"time"
)

// withPasswords sets what a node answered about rotation id's passwords.
func withPasswords(n Node, id string, next, previous, masterAuth bool) Node {
	n.Valkey.Passwords = PasswordState{Rotation: id, HasNext: next, HasPrevious: previous, MasterAuthNext: masterAuth}
	return n
}

func rotationSpec() Spec {
	s := testSpec(2)
	s.Rotation = &RotationRequest{ID: "default,replication@1", Users: []string{"default", "replication"}}
	s.RotationGrace = time.Minute
	return s
}

// The whole rotation: requested, new passwords added while nothing is published, published only
// once every running node accepts them, masterauth switched, the old ones retired after the
// grace period, complete once no node accepts them; each step a Steady self-loop in history.
func TestARotationPublishesOnlyWhatEveryNodeAcceptsAndRetiresAfterTheGrace(t *testing.T) {
	const id = "default,replication@1"
	spec := rotationSpec()
	p := steadyState()
	filed := PasswordsObject{Rotation: id, Phase: RotationAdding}
	all := func(sec int, s Spec, nodes ...Node) Observation {
		o := obsAt(sec, s, nodes...)
		o.Passwords = filed
		return o
	}

	d := Decide(p, all(1, spec, primary(10), replica(1, 10), replica(2, 10)))
	if d.Transition == nil || d.Transition.Event != EventRotationRequested || d.Next.State != Steady || d.Next.Rotation.Phase != RotationAdding {
		t.Fatalf("want rotation-requested as a Steady self-loop, got %+v next %+v", d.Transition, d.Next.Rotation)
	}
	p = d.Next

	// The file first: nothing is done to a node before a node that starts would get the same.
	unfiled := obsAt(2, spec, primary(10), replica(1, 10), replica(2, 10))
	d = Decide(p, unfiled)
	if got := actionsOf(d, "publish-passwords"); len(got) != 1 || !strings.Contains(got[0], "Adding") || len(d.Actions) != 1 {
		t.Fatalf("want only publish-passwords for Adding first, got %v", d.Actions)
	}
	old0 := withPasswords(primary(10), id, true, true, false)
	if d = Decide(p, obsAt(2, spec, old0, old0, old0)); d.Transition != nil {
		t.Fatalf("passwords-accepted before the file accepts them: %+v", d.Transition)
	}

	// Node 2 lacks the new password: it is added there, nothing is published.
	old := func(n Node) Node { return withPasswords(n, id, false, true, false) }
	added := func(n Node) Node { return withPasswords(n, id, true, true, false) }
	d = Decide(p, all(2, spec, added(primary(10)), added(replica(1, 10)), old(replica(2, 10))))
	if d.Transition != nil || len(actionsOf(d, "publish-passwords")) != 0 {
		t.Fatalf("published before every node accepts: %+v %v", d.Transition, d.Actions)
	}
	if got := actionsOf(d, "add-passwords"); len(got) != 1 || !strings.Contains(got[0], "s0-2") {
		t.Fatalf("want add-passwords on s0-2 only, got %v", got)
	}
	if d.Waiting.Kind != WaitRotationAdding || !strings.Contains(d.Waiting.Detail, "s0-2") {
		t.Fatalf("waiting should name s0-2: %q", d.Waiting)
	}
	// A running node that does not answer holds the publication back; a node whose pod does
	// not run does not (it starts from the users' file).
	d = Decide(p, all(3, spec, added(primary(10)), added(replica(1, 10)), unreachable(replica(2, 10), 1)))
	if d.Transition != nil {
		t.Fatalf("published while a running node does not answer: %+v", d.Transition)
	}
	gone := unreachable(replica(2, 10), 1)
	gone.Pod.Running = false
	d = Decide(p, all(4, spec, added(primary(10)), added(replica(1, 10)), gone))
	if d.Transition == nil || d.Transition.Event != EventPasswordsAccepted {
		t.Fatalf("want passwords-accepted with the third pod not running, got %+v (%s)", d.Transition, d.Waiting)
	}
	p = d.Next
	if p.Rotation.Phase != RotationPublished || !p.Rotation.PublishedAt.Equal(at(4)) {
		t.Fatalf("want Published at t4, got %+v", p.Rotation)
	}

	// Published: the Secret is written first, then masterauth follows on every node, and a
	// node that lacks the new password (restarted from a file not yet synced to its pod) gets it.
	restarted := withPasswords(replica(2, 10), id, false, true, false)
	restarted.Valkey.RunID = "run-2b"
	d = Decide(p, all(5, spec, added(primary(10)), added(replica(1, 10)), restarted))
	if got := actionsOf(d, "publish-passwords"); len(got) != 1 || len(d.Actions) != 1 || !strings.Contains(got[0], "Published") {
		t.Fatalf("want publish-passwords for Published alone, got %v", d.Actions)
	}
	filed.Phase = RotationPublished
	d = Decide(p, all(5, spec, added(primary(10)), added(replica(1, 10)), restarted))
	if got := actionsOf(d, "switch-master-auth"); len(got) != 2 {
		t.Fatalf("want switch-master-auth on the two nodes that accept the new passwords, got %v", got)
	}
	if got := actionsOf(d, "add-passwords"); len(got) != 1 || !strings.Contains(got[0], "s0-2") {
		t.Fatalf("want add-passwords on the restarted s0-2, got %v", got)
	}
	spec.Rotation = nil // the operator removes the request once it is recorded
	switched := func(n Node) Node { return withPasswords(n, id, true, true, true) }
	published := obsAt(6, spec, switched(primary(10)), switched(replica(1, 10)), switched(replica(2, 10)))
	published.Passwords = filed
	d = Decide(p, published)
	if d.Transition != nil || len(d.Actions) != 0 {
		t.Fatalf("within the grace period nothing happens, got %+v %v", d.Transition, d.Actions)
	}

	// A failover during the rotation: FailingOver does not touch passwords; the rotation is
	// still recorded when the cluster is Steady again.
	lost := Decide(p, obsAt(7, spec, unreachable(primary(10), 3), switched(detached(replica(1, 10))), switched(detached(replica(2, 10)))))
	if lost.Next.State != FailingOver || lost.Next.Rotation != p.Rotation {
		t.Fatalf("a failover must keep the rotation record, got %s %+v", lost.Next.State, lost.Next.Rotation)
	}
	for _, a := range lost.Actions {
		switch a.(type) {
		case AddPasswords, SwitchMasterAuth, RetirePasswords, PublishPasswords:
			t.Fatalf("password action during a failover: %v", a)
		}
	}

	// Another operator incarnation restarts the grace period on its own clock.
	other := published
	other.Time, other.Clock = at(30), "incarnation-2"
	d = Decide(p, other)
	if d.Transition == nil || d.Transition.Event != EventGraceClockRestarted {
		t.Fatalf("want grace-clock-restarted, got %+v", d.Transition)
	}
	p = d.Next

	// Grace over (60 s after t30 on the new clock), but a node still authenticates with the old
	// replication password: wait for it.
	late := published
	late.Time, late.Clock = at(100), "incarnation-2"
	late.Nodes[2] = withPasswords(replica(2, 10), id, true, true, false)
	if d = Decide(p, late); d.Transition != nil {
		t.Fatalf("retired while a node's masterauth is the old password: %+v", d.Transition)
	}
	late.Nodes[2] = switched(replica(2, 10))
	d = Decide(p, late)
	if d.Transition == nil || d.Transition.Event != EventGraceEnded || d.Next.Rotation.Phase != RotationRetiring {
		t.Fatalf("want grace-ended, got %+v", d.Transition)
	}
	p = d.Next

	// Retiring: the file drops the old ones first, then each node; complete when none has.
	late.Time = at(101)
	d = Decide(p, late)
	if got := actionsOf(d, "publish-passwords"); len(got) != 1 || len(d.Actions) != 1 || !strings.Contains(got[0], "Retiring") {
		t.Fatalf("want the users' file without the old passwords first, got %v", d.Actions)
	}
	late.Passwords.Phase = RotationRetiring
	d = Decide(p, late)
	if got := actionsOf(d, "retire-passwords"); len(got) != 3 {
		t.Fatalf("want retire-passwords on the three nodes, got %v", d.Actions)
	}
	done := func(n Node) Node { return withPasswords(n, id, true, false, true) }
	final := obsAt(102, spec, done(primary(10)), done(replica(1, 10)), done(replica(2, 10)))
	final.Clock = "incarnation-2"
	final.Passwords = late.Passwords
	d = Decide(p, final)
	if d.Transition == nil || d.Transition.Event != EventRotationComplete || d.Next.Rotation != (Rotation{}) || d.Next.Rotated != id {
		t.Fatalf("want rotation-complete, got %+v next %+v", d.Transition, d.Next)
	}

	// The same request again is not carried out twice.
	spec.Rotation = rotationSpec().Rotation
	again := obsAt(103, spec, done(primary(10)), done(replica(1, 10)), done(replica(2, 10)))
	again.Clock = "incarnation-2"
	if d = Decide(d.Next, again); d.Transition != nil {
		t.Fatalf("a completed rotation was requested again: %+v", d.Transition)
	}
}

// Asking to retire now ends the grace at once; a request that is not prepared waits and says
// why; a second request waits for the first.
func TestARotationRetiresOnRequestAndRequestsWaitTheirTurn(t *testing.T) {
	const id = "default,replication@1"
	spec := rotationSpec()
	spec.Rotation.Pending = "preparing the new passwords"
	spec.Replicas = 1
	d := Decide(steadyState(), obsAt(1, spec, primary(10), replica(1, 10)))
	if d.Transition != nil || (d.Waiting.Kind != WaitRotationPending || d.Waiting.Detail != "preparing the new passwords") {
		t.Fatalf("a pending request must wait and say why: %+v %q", d.Transition, d.Waiting)
	}
	p := steadyState()
	p.Rotation = Rotation{ID: id, Users: "default,replication", Phase: RotationPublished, PublishedAt: at(1)}
	spec = testSpec(1)
	spec.RotationGrace = time.Hour
	spec.Rotation = &RotationRequest{ID: "operator@2", Users: []string{"operator"}}
	switched := func(n Node) Node { return withPasswords(n, id, true, true, true) }
	o := obsAt(2, spec, switched(primary(10)), switched(replica(1, 10)))
	o.Passwords = PasswordsObject{Rotation: id, Phase: RotationPublished}
	d = Decide(p, o)
	if d.Transition != nil || (d.Waiting.Kind != WaitRotationQueued || d.Waiting.ID != "operator@2" || d.Waiting.Other != id) {
		t.Fatalf("a second request must wait for the first: %+v %q", d.Transition, d.Waiting)
	}
	spec.RetireNow = true
	o = obsAt(3, spec, switched(primary(10)), switched(replica(1, 10)))
	o.Passwords = PasswordsObject{Rotation: id, Phase: RotationPublished}
	d = Decide(p, o)
	if d.Transition == nil || d.Transition.Event != EventGraceEnded {
		t.Fatalf("retire-now must end the grace at once, got %+v", d.Transition)
	}
}
