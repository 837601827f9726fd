package machine

import (
	"fmt"
	"strings"
	"time"
)

// Password rotation is a planned operation that runs beside the states rather than as one:
// it changes no role and moves no data, so it needs no state of its own, but every step is a
// transition (a Steady self-loop) so that history tells it. Its steps are paused while the
// cluster is in any other state (a failover or a rollout takes priority) and resume in Steady
// from where the record says. The machine never sees a password: the operator keeps the new
// and the previous ones in a Secret of the rotation and reports, per node, whether it accepts
// them (see PasswordState).
//
// The order is what keeps every client and replica authenticated:
//  1. Adding: the users' file (what a node that starts reads) accepts the new password beside
//     the old one, then the new password is added to every rotated user on every running
//     node. Nothing is published: clients, replicas (masterauth) and the operator still use
//     the old one.
//  2. passwords-accepted: the file and every running node accept the new password. Only now
//     is it published (the auth Secret keys that clients read, masterauth in the file), and
//     each node's masterauth switches. The old one keeps working for the grace period.
//  3. grace-ended: the grace passed (or the user asked to retire now) and every node's
//     masterauth is the new one: the old password is removed from the file, then from every
//     node.
//  4. rotation-complete: the file and every running node accept only the new passwords.
//
// The file changes at the start of each phase, before any node is changed, and a phase ends
// only once the file reflects it: a node that restarts at any moment starts with what the
// running nodes are being given, never with less (the simulator found the other order: a
// primary restarted between passwords-accepted and the file's update came back refusing the
// password clients were being given).

// RotationPhase is how far a rotation has come.
type RotationPhase string

const (
	// RotationAdding: the new passwords are being added to every node; nothing is published.
	RotationAdding RotationPhase = "Adding"
	// RotationPublished: every node accepts the new passwords, clients are given them, and
	// the old ones still work until the grace period ends.
	RotationPublished RotationPhase = "Published"
	// RotationRetiring: the old passwords are being removed from every node.
	RotationRetiring RotationPhase = "Retiring"
)

// Rotation is the password rotation in progress (zero: none).
type Rotation struct {
	// ID is the request's ID (carried out once: see Persisted.Rotated).
	ID string
	// Users are the rotated users, comma-separated (a string keeps Rotation comparable).
	Users string
	Phase RotationPhase
	// PublishedAt is the observation time the new passwords were published at: the grace
	// period starts then. PublishedClock is its clock; on another clock the grace restarts.
	PublishedAt    time.Time
	PublishedClock string
}

// RotationRequest asks for the passwords of Users to be replaced. ID identifies the request,
// so that one is carried out once. Pending says why it cannot start yet (the operator has
// not prepared the new passwords).
type RotationRequest struct {
	ID      string
	Users   []string
	Pending string
}

// PasswordState is what a node answered about the passwords of the rotation Rotation (the
// operator compares each rotated user's password hashes, and masterauth, with the rotation's
// passwords). Zero when no rotation is known, or the node was not asked.
type PasswordState struct {
	Rotation string
	// HasNext: every rotated user accepts its new password.
	HasNext bool
	// HasPrevious: some rotated user still accepts its previous password.
	HasPrevious bool
	// MasterAuthNext: the node authenticates to a primary with the new replication password
	// (true when the replication user is not rotated).
	MasterAuthNext bool
}

// PasswordsObject is what the auth Secret reflects, as the operator reads it back: the
// rotation it was last written for ("" before any) and that rotation's phase (see
// PublishPasswords).
type PasswordsObject struct {
	Rotation string
	Phase    RotationPhase
}

// AddPasswords adds the rotation's new password to each rotated user of Node, beside the
// current one (ACL SETUSER u >new).
type AddPasswords struct {
	Node     string
	RunID    string
	Rotation string
}

// PublishPasswords writes the auth Secret for Phase of the rotation: Adding, a users' file
// that accepts the new passwords beside the old ones (clients still read the old ones);
// Published (decided only once every running node accepts the new ones), the new passwords
// in the keys clients read and the new replication password as the file's masterauth, the
// file still accepting both; Retiring, the file accepting the new ones only.
type PublishPasswords struct {
	Rotation string
	Phase    RotationPhase
}

// SwitchMasterAuth makes Node authenticate to its primary with the rotation's new
// replication password (CONFIG SET masterauth). Decided only once every node accepts it.
type SwitchMasterAuth struct {
	Node     string
	RunID    string
	Rotation string
}

// RetirePasswords removes the rotation's previous passwords from each rotated user of Node
// (ACL SETUSER u <old).
type RetirePasswords struct {
	Node     string
	RunID    string
	Rotation string
}

func (AddPasswords) Kind() string     { return "add-passwords" }
func (PublishPasswords) Kind() string { return "publish-passwords" }
func (SwitchMasterAuth) Kind() string { return "switch-master-auth" }
func (RetirePasswords) Kind() string  { return "retire-passwords" }

func (a AddPasswords) String() string {
	return fmt.Sprintf("add-passwords %s (%s)", a.Node, a.Rotation)
}
func (a PublishPasswords) String() string {
	return fmt.Sprintf("publish-passwords %s for %s", a.Rotation, a.Phase)
}
func (a SwitchMasterAuth) String() string {
	return fmt.Sprintf("switch-master-auth %s (%s)", a.Node, a.Rotation)
}
func (a RetirePasswords) String() string {
	return fmt.Sprintf("retire-passwords %s (%s)", a.Node, a.Rotation)
}

func guardRotationRequested(d *decider) (outcome, bool) {
	r := d.v.spec.Rotation
	if r == nil || r.ID == "" || r.Pending != "" || len(r.Users) == 0 || r.ID == d.p.Rotated || d.p.Rotation.ID != "" {
		return outcome{}, false
	}
	if d.v.spec.Mode == ModeSentinel {
		// The sentinels hold the operator's and the applications' passwords too, and no
		// action gives them new ones yet: a rotation would lock both out of the sentinels
		// once the old ones retire (sentinelNotBuilt says so).
		return outcome{}, false
	}
	next := d.p
	next.Rotation = Rotation{ID: r.ID, Users: strings.Join(r.Users, ","), Phase: RotationAdding}
	return outcome{next: next, message: fmt.Sprintf("rotate the passwords of %s (%s): adding the new ones to every node beside the old", strings.Join(r.Users, ", "), r.ID)}, true
}

func guardPasswordsAccepted(d *decider) (outcome, bool) {
	r := d.p.Rotation
	if r.Phase != RotationAdding || !d.filed(r) {
		return outcome{}, false
	}
	if why := d.rotationLagging(r, func(s PasswordState) bool { return s.HasNext }); why != "" {
		return outcome{}, false
	}
	next := d.p
	next.Rotation.Phase = RotationPublished
	next.Rotation.PublishedAt, next.Rotation.PublishedClock = d.obs.Time, d.obs.Clock
	msg := fmt.Sprintf("every running node accepts the new passwords of %s: publish them; the old ones work until %s", r.Users, d.retireAt(next.Rotation))
	return outcome{next: next, message: msg}, true
}

func guardGraceClockRestarted(d *decider) (outcome, bool) {
	r := d.p.Rotation
	if r.Phase != RotationPublished || r.PublishedClock == d.obs.Clock || d.v.spec.RetireNow {
		return outcome{}, false
	}
	next := d.p
	next.Rotation.PublishedAt, next.Rotation.PublishedClock = d.obs.Time, d.obs.Clock
	return outcome{next: next, message: fmt.Sprintf("the grace period of %s was timed by another operator incarnation: it starts again, the old passwords work until %s", r.ID, d.retireAt(next.Rotation))}, true
}

func guardGraceEnded(d *decider) (outcome, bool) {
	r := d.p.Rotation
	if r.Phase != RotationPublished || !d.filed(r) {
		return outcome{}, false
	}
	if !d.v.spec.RetireNow && (r.PublishedClock != d.obs.Clock || d.obs.Time.Before(r.PublishedAt.Add(d.v.spec.RotationGrace))) {
		return outcome{}, false
	}
	if why := d.rotationLagging(r, func(s PasswordState) bool { return s.HasNext && s.MasterAuthNext }); why != "" {
		return outcome{}, false
	}
	next := d.p
	next.Rotation.Phase = RotationRetiring
	why := "the grace period ended"
	if d.v.spec.RetireNow {
		why = "retiring the old passwords was asked for"
	}
	return outcome{next: next, message: fmt.Sprintf("%s: remove the old passwords of %s from every node", why, r.Users)}, true
}

func guardRotationComplete(d *decider) (outcome, bool) {
	r := d.p.Rotation
	if r.Phase != RotationRetiring || !d.filed(r) {
		return outcome{}, false
	}
	if why := d.rotationLagging(r, func(s PasswordState) bool { return !s.HasPrevious }); why != "" {
		return outcome{}, false
	}
	next := d.p
	next.Rotation = Rotation{}
	next.Rotated = r.ID
	return outcome{next: next, message: fmt.Sprintf("no node accepts the old passwords of %s any more: rotation %s complete", r.Users, r.ID)}, true
}

// filed reports whether the auth Secret reflects the phase of r.
func (d *decider) filed(r Rotation) bool {
	return d.obs.Passwords == PasswordsObject{Rotation: r.ID, Phase: r.Phase}
}

// retireAt is when the grace period of r ends.
func (d *decider) retireAt(r Rotation) string {
	return r.PublishedAt.Add(d.v.spec.RotationGrace).UTC().Format(time.RFC3339)
}

// rotationLagging says which running node does not yet satisfy ok for rotation r ("" when
// every one does). A node whose pod does not run does not hold a rotation back: it starts
// from the users' file, which the rotation keeps consistent with each phase. A node that runs
// and does not answer does: it may still accept only what it had.
func (d *decider) rotationLagging(r Rotation, ok func(PasswordState) bool) string {
	for _, n := range d.v.nodes {
		if !n.Pod.Exists || !n.Pod.Running {
			continue
		}
		if !usable(n) {
			return n.Name + " runs and does not answer"
		}
		if n.Valkey.Passwords.Rotation != r.ID {
			return n.Name + "'s passwords were not compared with the rotation's"
		}
		if !ok(n.Valkey.Passwords) {
			return n.Name
		}
	}
	return ""
}

// rotationActions carry the rotation in progress on (Steady only: see the top of the file).
func (d *decider) rotationActions(p Persisted, b *actionList) {
	r := p.Rotation
	if q := d.v.spec.Rotation; q != nil && q.ID != p.Rotated && q.ID != r.ID {
		switch {
		case r.ID != "":
			b.wait(Wait{Kind: WaitRotationQueued, ID: q.ID, Other: r.ID})
		case q.Pending != "":
			b.wait(Wait{Kind: WaitRotationPending, ID: q.ID, Detail: q.Pending})
		}
	}
	if r.ID == "" {
		return
	}
	if !d.filed(r) {
		// First: nodes are changed only once a node that starts gets the same.
		b.add(PublishPasswords{Rotation: r.ID, Phase: r.Phase})
		b.wait(Wait{Kind: WaitRotationPublishing, ID: r.ID, Detail: string(r.Phase)})
		return
	}
	for _, n := range d.v.nodes {
		if !usable(n) || n.Valkey.Passwords.Rotation != r.ID {
			continue
		}
		s := n.Valkey.Passwords
		switch {
		case r.Phase != RotationRetiring && !s.HasNext:
			b.add(AddPasswords{Node: n.Name, RunID: n.Valkey.RunID, Rotation: r.ID})
		case r.Phase == RotationPublished && !s.MasterAuthNext:
			b.add(SwitchMasterAuth{Node: n.Name, RunID: n.Valkey.RunID, Rotation: r.ID})
		case r.Phase == RotationRetiring && s.HasPrevious:
			b.add(RetirePasswords{Node: n.Name, RunID: n.Valkey.RunID, Rotation: r.ID})
		}
	}
	switch r.Phase {
	case RotationAdding:
		if why := d.rotationLagging(r, func(s PasswordState) bool { return s.HasNext }); why != "" {
			b.wait(Wait{Kind: WaitRotationAdding, ID: r.ID, Detail: why})
		}
	case RotationPublished:
		b.wait(Wait{Kind: WaitRotationPublished, ID: r.ID, Detail: d.retireAt(r)})
	case RotationRetiring:
		if why := d.rotationLagging(r, func(s PasswordState) bool { return !s.HasPrevious }); why != "" {
			b.wait(Wait{Kind: WaitRotationRetiring, ID: r.ID, Detail: why})
		}
	}
}
