package sim

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Passwords, reduced to what a rotation's safety depends on. The world knows one rotation at a
// time (the one the operator prepared) and, per process, whether it accepts that rotation's
// new and previous passwords and which one it authenticates to its master with (masterauth). A
// process starts from the users' file, which is what the auth Secret publishes: before the
// rotation's publication the previous password only, then both, then (retired) the new only.
// A replica's handshake is refused by a master that does not accept its masterauth: a link that
// is up stays up (Valkey authenticates once per connection), the next one fails.

// passwordState is a process's passwords relative to the world's rotation.
type passwordState struct {
	next, previous, masterAuthNext bool
}

// fromFile is what a process starts with.
func (w *World) fromFile() passwordState {
	if w.rotation == "" || w.published.Rotation != w.rotation {
		return passwordState{previous: true}
	}
	switch w.published.Phase {
	case machine.RotationAdding:
		return passwordState{next: true, previous: true}
	case machine.RotationPublished:
		return passwordState{next: true, previous: true, masterAuthNext: true}
	default:
		return passwordState{next: true, masterAuthNext: true}
	}
}

// prepareRotation is the operator's side of a request: the new passwords are made (the
// rotation's Secret) once no rotation is in progress, and every process is then judged
// against them. It returns why the request cannot start yet ("" once prepared).
func (w *World) prepareRotation(p machine.Persisted) string {
	r := w.spec.Rotation
	if r == nil || r.ID == p.Rotated || r.ID == w.rotation {
		return ""
	}
	if p.Rotation.ID != "" {
		return "waits for " + p.Rotation.ID
	}
	w.rotation = r.ID
	for _, n := range w.nodes {
		n.pw = passwordState{previous: true}
	}
	return ""
}

// authAccepted reports whether master m lets replica r's handshake in. A sealed replica's
// password is the seal, which no master accepts (seal.go).
func authAccepted(r, m *node) bool {
	if !r.seal.At.IsZero() {
		return false
	}
	if r.pw.masterAuthNext {
		return m.pw.next
	}
	return m.pw.previous
}

// applyPasswords carries out the rotation's actions.
func (w *World) applyPasswords(a machine.Action) error {
	switch a := a.(type) {
	case machine.PublishPasswords:
		if a.Rotation != w.rotation {
			return fmt.Errorf("publish-passwords: rotation %s is not the prepared %s", a.Rotation, w.rotation)
		}
		w.published = machine.PasswordsObject(a)
		return nil
	case machine.AddPasswords:
		return w.onPasswords(a.Node, a.RunID, a.Rotation, func(s *passwordState) { s.next = true })
	case machine.SwitchMasterAuth:
		return w.onPasswords(a.Node, a.RunID, a.Rotation, func(s *passwordState) { s.masterAuthNext = true })
	case machine.RetirePasswords:
		return w.onPasswords(a.Node, a.RunID, a.Rotation, func(s *passwordState) { s.previous = false })
	}
	return fmt.Errorf("not a password action: %s", a)
}

func (w *World) onPasswords(name, runID, rotation string, change func(*passwordState)) error {
	if rotation != w.rotation {
		return fmt.Errorf("%s: rotation %s is not the prepared %s", name, rotation, w.rotation)
	}
	n, err := w.target(name, runID)
	if err != nil {
		return err
	}
	change(&n.pw)
	return nil
}

// observePasswords is the survey's comparison of a node's passwords with the rotation's.
func (w *World) observePasswords(n *node) machine.PasswordState {
	if w.rotation == "" {
		return machine.PasswordState{}
	}
	return machine.PasswordState{Rotation: w.rotation, HasNext: n.pw.next, HasPrevious: n.pw.previous, MasterAuthNext: n.pw.masterAuthNext}
}

// checkPasswords: once new passwords are published, every process that runs accepts them
// (clients were given them), and once the previous ones are retired from the file, no process
// that runs authenticates to its master with one (its next handshake would be refused).
func (w *World) checkPasswords() {
	if w.rotation == "" || w.published.Rotation != w.rotation || w.published.Phase == machine.RotationAdding {
		return
	}
	for _, n := range w.nodes {
		if !n.exists || !n.running {
			continue
		}
		if !n.pw.next {
			w.violate(ViolationPasswords, "%s refuses the published password of rotation %s", n.name, w.rotation)
		}
		if w.published.Phase == machine.RotationRetiring && !n.pw.masterAuthNext && n.role == machine.RoleReplica {
			w.violate(ViolationPasswords, "%s authenticates to its master with a password rotation %s retired", n.name, w.rotation)
		}
	}
}
