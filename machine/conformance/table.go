package conformance

import (
	"context"
	"fmt"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Observer is what every world of the contract is: an actuator whose effects can be observed
// as the machine observes them, that nothing but the table acts on (no operator reconciles it
// meanwhile).
type Observer interface {
	machine.Actuator
	// Observe is what the machine would see now.
	Observe(ctx context.Context) (machine.Observation, error)
	// Await lets the world move on (replication links come up, pods are re-created) until
	// cond holds for an observation, or says what it last saw when it gives up.
	Await(ctx context.Context, what string, cond func(machine.Observation) bool) error
}

// World is one replication group (shard 0), Steady with a primary (ordinal 0 at the start) and
// two replicas (ordinals 1 and 2): the world of Table.
type World interface {
	Observer
	// TakeSnapshot backs shard 0 up as it is now and returns the snapshot's ID: what a
	// RestoreSnapshot action names to load it (the simulator's snapshot, the real store's
	// location).
	TakeSnapshot(ctx context.Context) (string, error)
	// PrepareRotation makes new passwords for the application and replication users (what a
	// rotation request prepares, recorded as the rotation in progress, phase Adding) and
	// returns the rotation's ID; observations then report each node's passwords against them.
	// Repeated, it returns the same rotation.
	PrepareRotation(ctx context.Context) (string, error)
}

// Row is one action on the world as the rows before it left it.
type Row struct {
	Name string
	// Action is built from what is observed before it (run ids, IPs, sizes).
	Action func(before machine.Observation) (machine.Action, error)
	// Snapshot rows take a snapshot first (World.TakeSnapshot) and build their action with
	// ActionOn from it instead.
	Snapshot bool
	ActionOn func(before machine.Observation, snapshot string) (machine.Action, error)
	// Rotation rows prepare a password rotation first (World.PrepareRotation) and build their
	// action with ActionOn from its ID.
	Rotation bool
	// Ghost rows restart the node it names on an empty volume first (ClusterWorld.EmptyRestart)
	// and wait until it answers as a new node; the action is then built from what is observed.
	Ghost func(before machine.Observation) string
	// Refused rows expect Apply to fail and the world to be as before (Expect still holds).
	Refused bool
	// Resumable rows apply the action again while its effect does not hold or the last
	// application failed, up to resumeTries times, as the machine decides it again on each
	// turn: an actuator may do a bounded part of the work per application (migrate-slots
	// within its time budget) or fail on the way (a bulk of commands that timed out).
	Resumable bool
	// ChecksData rows then read back every key written before the table (DataWorld.CheckData):
	// an effect on data is judged by a client of the world's own, not by what the actuators
	// report.
	ChecksData bool
	// Expect is the effect, judged against the observation before the action: Await polls it.
	Expect func(before, after machine.Observation) bool
	// Effect says what Expect checks, for failure messages.
	Effect string
}

// Table is the actuator contract. Rows run in order; each starts from the world the rows
// before it left.
var Table = []Row{
	{
		Name: "an action for another process of the node is refused",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Promote{Target: machine.Target{Shard: 0, Node: name(b, 2), RunID: "not-" + runID(b, 2)}}, nil
		},
		Refused: true,
		Effect:  "node 2 still a replica following the primary",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 2)
			return n != nil && n.Valkey.Role == machine.RoleReplica && n.Valkey.PrimaryHost == ip(b, primaryOf(b))
		},
	},
	{
		Name: "reload-certificate of a node that serves no TLS is refused: it has no certificate files to load",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.ReloadCertificate{Target: machine.Target{Shard: 0, Node: name(b, 1), RunID: runID(b, 1)}, Serial: "none"}, nil
		},
		Refused: true,
		Effect:  "node 1 answering, serving no certificate",
		Expect: func(_, a machine.Observation) bool {
			n := node(a, 1)
			return n != nil && n.Reachable && n.Valkey.CertificateSerial == ""
		},
	},
	{
		Name: "detach stops a replica following without touching its data",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Detach{Target: machine.Target{Shard: 0, Node: name(b, 2), RunID: runID(b, 2)}}, nil
		},
		Effect: "node 2 a replica of nothing, its history and offset kept",
		Expect: func(b, a machine.Observation) bool {
			n, was := node(a, 2), node(b, 2)
			return n != nil && n.Valkey.Role == machine.RoleReplica && n.Valkey.PrimaryHost == "" &&
				n.Valkey.ReplID == was.Valkey.ReplID && n.Valkey.Offset >= was.Valkey.Offset
		},
	},
	{
		Name: "seal takes a replica's replication password away and records when, leaving whom it follows",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Seal{Target: machine.Target{Shard: 0, Node: name(b, 2), RunID: runID(b, 2)}}, nil
		},
		Effect: "node 2 sealed at or after the observation before, on the observer's clock, still a replica of nothing",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 2)
			return n != nil && n.Valkey.Role == machine.RoleReplica && n.Valkey.PrimaryHost == "" &&
				!n.Valkey.Sealed.At.IsZero() && !n.Valkey.Sealed.At.Before(b.Time) && !a.Time.Before(n.Valkey.Sealed.At) && n.Valkey.Sealed.Clock == a.Clock
		},
	},
	{
		Name: "a linked replica sealed keeps its link, and is not recorded as unlinked",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Seal{Target: machine.Target{Shard: 0, Node: name(b, 1), RunID: runID(b, 1)}}, nil
		},
		Effect: "node 1 sealed, not unlinked, still linked to the primary",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 1)
			return n != nil && !n.Valkey.Sealed.At.IsZero() && !n.Valkey.Sealed.Unlinked &&
				n.Valkey.PrimaryHost == ip(b, primaryOf(b)) && n.Valkey.LinkUp
		},
	},
	{
		Name: "unseal gives a replica its replication password back",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Unseal{Target: machine.Target{Shard: 0, Node: name(b, 1), RunID: runID(b, 1)}}, nil
		},
		Effect: "node 1 not sealed, still linked to the primary",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 1)
			return n != nil && n.Valkey.Sealed.At.IsZero() && n.Valkey.PrimaryHost == ip(b, primaryOf(b)) && n.Valkey.LinkUp
		},
	},
	{
		Name: "replica-of points a replica at the primary, and its link comes up",
		Action: func(b machine.Observation) (machine.Action, error) {
			p := primaryOf(b)
			return machine.ReplicaOf{Target: machine.Target{Shard: 0, Node: name(b, 2), RunID: runID(b, 2)}, PrimaryIP: ip(b, p), PrimaryRunID: runID(b, p)}, nil
		},
		Effect: "node 2 linked to the primary (its seal undone: replica-of sets the replication password)",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 2)
			return n != nil && n.Valkey.PrimaryHost == ip(b, primaryOf(b)) && n.Valkey.LinkUp && n.Valkey.Sealed.At.IsZero()
		},
	},
	{
		Name: "close-writes closes the primary to client writes and lets its replicas go on syncing",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.CloseWrites{Target: machine.Target{Shard: 0, Node: name(b, primaryOf(b)), RunID: runID(b, primaryOf(b))}}, nil
		},
		Effect: "the primary fenced for writes, open for sync, its replicas linked",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, primaryOf(b))
			if n == nil || n.Valkey.Role != machine.RolePrimary || !n.Valkey.WritesFenced || n.Valkey.SyncFenced {
				return false
			}
			for _, r := range a.Nodes {
				if r.Name != n.Name && r.Valkey.PrimaryHost == n.Pod.IP && !r.Valkey.LinkUp {
					return false
				}
			}
			return true
		},
	},
	{
		Name: "fence closes the primary to client writes and to replication",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.Fence{Target: machine.Target{Shard: 0, Node: name(b, primaryOf(b)), RunID: runID(b, primaryOf(b))}}, nil
		},
		Effect: "the primary fenced for writes and sync",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, primaryOf(b))
			return n != nil && n.Valkey.Role == machine.RolePrimary && n.Valkey.WritesFenced && n.Valkey.SyncFenced
		},
	},
	{
		Name:     "restore-snapshot loads a snapshot into the fenced primary: a new history, still fenced for writes, open for replicas",
		Snapshot: true,
		ActionOn: func(b machine.Observation, snapshot string) (machine.Action, error) {
			p := primaryOf(b)
			return machine.RestoreSnapshot{Target: machine.Target{Shard: 0, Node: name(b, p), RunID: runID(b, p)}, Snapshot: snapshot, RequestID: snapshot}, nil
		},
		Effect: "the primary's process holds the snapshot's keys under a replication ID of its own (not its old one, nor as its previous one), writes fenced, sync open",
		Expect: func(b, a machine.Observation) bool {
			p := primaryOf(b)
			n, was := node(a, p), node(b, p)
			return n != nil && n.Reachable && n.Valkey.RunID == was.Valkey.RunID && n.Valkey.Role == machine.RolePrimary &&
				n.Valkey.ReplID != "" && n.Valkey.ReplID != was.Valkey.ReplID && n.Valkey.ReplID2 != was.Valkey.ReplID &&
				n.Valkey.WritesFenced && !n.Valkey.SyncFenced && n.Valkey.Keys == was.Valkey.Keys
		},
	},
	{
		Name: "open-writes opens the primary again",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.OpenWrites{Target: machine.Target{Shard: 0, Node: name(b, primaryOf(b)), RunID: runID(b, primaryOf(b))}}, nil
		},
		Effect: "the primary open for writes and sync, its replicas linked again",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, primaryOf(b))
			if n == nil || n.Valkey.WritesFenced || n.Valkey.SyncFenced {
				return false
			}
			for _, r := range a.Nodes {
				if r.Name != n.Name && (r.Valkey.PrimaryHost != n.Pod.IP || !r.Valkey.LinkUp) {
					return false
				}
			}
			return true
		},
	},
	{
		Name: "hand-over makes a linked replica the primary and the old primary its replica",
		Action: func(b machine.Observation) (machine.Action, error) {
			p := primaryOf(b)
			return machine.HandOver{Shard: 0, From: name(b, p), FromRunID: runID(b, p), To: name(b, 1), ToRunID: runID(b, 1), ToIP: ip(b, 1)}, nil
		},
		Effect: "node 1 the primary, the old primary following it",
		Expect: func(b, a machine.Observation) bool {
			to, from := node(a, 1), node(a, primaryOf(b))
			return to != nil && from != nil && to.Valkey.Role == machine.RolePrimary &&
				from.Valkey.Role == machine.RoleReplica && from.Valkey.PrimaryHost == to.Pod.IP
		},
	},
	{
		Name: "ensure-objects shrinks to the action's count, not the spec's",
		Action: func(b machine.Observation) (machine.Action, error) {
			p := primaryOf(b)
			return machine.EnsureObjects{Shards: 1, Replicas: 1, Revision: b.Objects.Revision, Keep: []machine.Proc{{Node: name(b, p), RunID: runID(b, p)}}}, nil
		},
		Effect: "two pods, node 2's gone",
		Expect: func(_, a machine.Observation) bool {
			n := node(a, 2)
			return a.Objects.Replicas == 1 && (n == nil || !n.Pod.Exists)
		},
	},
	{
		Name: "ensure-objects grows back to the action's count",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.EnsureObjects{Shards: 1, Replicas: 2, Revision: b.Objects.Revision}, nil
		},
		Effect: "node 2 back, answering",
		Expect: func(_, a machine.Observation) bool {
			n := node(a, 2)
			return a.Objects.Replicas == 2 && n != nil && n.Pod.Exists && n.Reachable
		},
	},
	{
		Name: "roll-pod restarts the pod: a new process answers",
		Action: func(b machine.Observation) (machine.Action, error) {
			return machine.RollPod{Shard: 0, Node: name(b, 2), Revision: b.Objects.Revision}, nil
		},
		Effect: "node 2 answering with another run id",
		Expect: func(b, a machine.Observation) bool {
			n := node(a, 2)
			return n != nil && n.Reachable && n.Valkey.RunID != runID(b, 2)
		},
	},
	{
		Name: "expand-volumes grows the claims it names, and only those",
		Action: func(b machine.Observation) (machine.Action, error) {
			n := node(b, 0)
			if n == nil || n.Pod.VolumeBytes == 0 {
				return nil, fmt.Errorf("%s has no claim size to grow", name(b, 0))
			}
			return machine.ExpandVolumes{Nodes: []string{n.Name}, Bytes: n.Pod.VolumeBytes + 1<<30}, nil
		},
		Effect: "node 0's claim 1 GiB larger, node 1's unchanged",
		Expect: func(b, a machine.Observation) bool {
			n, m := node(a, 0), node(a, 1)
			return n != nil && m != nil && n.Pod.VolumeBytes == node(b, 0).Pod.VolumeBytes+1<<30 &&
				m.Pod.VolumeBytes == node(b, 1).Pod.VolumeBytes
		},
	},
	{
		Name:     "add-passwords gives a node the new passwords beside the old ones",
		Rotation: true,
		ActionOn: func(b machine.Observation, id string) (machine.Action, error) {
			return machine.AddPasswords{Node: name(b, 1), RunID: runID(b, 1), Rotation: id}, nil
		},
		Effect: "node 1 accepts both, node 2 the old ones only",
		Expect: func(_, a machine.Observation) bool {
			n, m := node(a, 1), node(a, 2)
			return n != nil && m != nil && n.Valkey.Passwords.HasNext && n.Valkey.Passwords.HasPrevious &&
				!m.Valkey.Passwords.HasNext && m.Valkey.Passwords.HasPrevious
		},
	},
	{
		Name:     "publish-passwords makes the auth Secret reflect the phase",
		Rotation: true,
		ActionOn: func(_ machine.Observation, id string) (machine.Action, error) {
			return machine.PublishPasswords{Rotation: id, Phase: machine.RotationAdding}, nil
		},
		Effect: "the observation reports the rotation's Adding phase published",
		Expect: func(_, a machine.Observation) bool {
			return a.Passwords.Phase == machine.RotationAdding && a.Passwords.Rotation != ""
		},
	},
	{
		Name:     "switch-master-auth makes a replica authenticate with the new replication password",
		Rotation: true,
		ActionOn: func(b machine.Observation, id string) (machine.Action, error) {
			return machine.SwitchMasterAuth{Node: name(b, 1), RunID: runID(b, 1), Rotation: id}, nil
		},
		Effect: "node 1's masterauth the new one, node 2's not",
		Expect: func(_, a machine.Observation) bool {
			n, m := node(a, 1), node(a, 2)
			return n != nil && m != nil && n.Valkey.Passwords.MasterAuthNext && !m.Valkey.Passwords.MasterAuthNext
		},
	},
	{
		Name:     "retire-passwords removes the old passwords from a node",
		Rotation: true,
		ActionOn: func(b machine.Observation, id string) (machine.Action, error) {
			return machine.RetirePasswords{Node: name(b, 1), RunID: runID(b, 1), Rotation: id}, nil
		},
		Effect: "node 1 accepts the new passwords only, node 2 still the old ones",
		Expect: func(_, a machine.Observation) bool {
			n, m := node(a, 1), node(a, 2)
			return n != nil && m != nil && n.Valkey.Passwords.HasNext && !n.Valkey.Passwords.HasPrevious && m.Valkey.Passwords.HasPrevious
		},
	},
}

// Run plays the table against w, reporting each row through report (nil: the row held).
func Run(ctx context.Context, w World, report func(row Row, err error)) {
	if o, err := w.Observe(ctx); err != nil || primaryOf(o) != 0 || node(o, 1) == nil || node(o, 2) == nil {
		report(Row{Name: "the world before the table"}, fmt.Errorf("want a primary at ordinal 0 and replicas at 1 and 2 (%v): %+v", err, o.Nodes))
		return
	}
	for _, row := range Table {
		report(row, play(ctx, w, row))
	}
}

// DataWorld is a world that can read back the keys written into it before the table.
type DataWorld interface {
	// CheckData reads every key written before the table through a client that is not the
	// actuators' and says which one is missing or different.
	CheckData(ctx context.Context) error
}

func play(ctx context.Context, w Observer, row Row) error {
	before, err := w.Observe(ctx)
	if err != nil {
		return fmt.Errorf("observing before: %w", err)
	}
	var a machine.Action
	if row.Ghost != nil {
		if before, err = ghost(ctx, w, row.Ghost(before), before); err != nil {
			return err
		}
	}
	if row.Snapshot || row.Rotation {
		rw, ok := w.(World)
		if !ok {
			return fmt.Errorf("the row needs a snapshot or a rotation, which this world does not prepare")
		}
		prepare, what := rw.TakeSnapshot, "taking the snapshot"
		if row.Rotation {
			prepare, what = rw.PrepareRotation, "preparing the rotation"
		}
		id, err := prepare(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if before, err = w.Observe(ctx); err != nil {
			return fmt.Errorf("observing before: %w", err)
		}
		a, err = row.ActionOn(before, id)
		if err != nil {
			return err
		}
	} else if a, err = row.Action(before); err != nil {
		return err
	}
	err = w.Apply(ctx, a)
	// A resumable action is decided again while its effect does not hold, whether the last
	// application did part of the work or failed on the way (a bulk of commands that timed
	// out): the error that counts is the last one.
	var failures []string // a resumable row's failed applications, for its failure message
	for i := 0; row.Resumable && i < resumeTries; i++ {
		after, oerr := w.Observe(ctx)
		if err == nil && oerr == nil && row.Expect(before, after) {
			break
		}
		if err != nil {
			failures = append(failures, err.Error())
		}
		err = w.Apply(ctx, a)
	}
	switch {
	case row.Refused && err == nil:
		return fmt.Errorf("%s was carried out, want it refused", a)
	case !row.Refused && err != nil:
		return fmt.Errorf("%s: %w", a, err)
	}
	if err := w.Await(ctx, row.Effect, func(after machine.Observation) bool { return row.Expect(before, after) }); err != nil {
		// The effect is judged against the world before the action: show it, and what the
		// applications of a resumable row reported, so that a failure can be read alone.
		if len(failures) > 0 {
			err = fmt.Errorf("%w; earlier applications failed: %s", err, strings.Join(failures, "; "))
		}
		return fmt.Errorf("after %s: %w; before: %s", a, err, Describe(before))
	}
	if row.ChecksData {
		dw, ok := w.(DataWorld)
		if !ok {
			return fmt.Errorf("the row checks data, which this world cannot read back")
		}
		if err := dw.CheckData(ctx); err != nil {
			return fmt.Errorf("after %s: %w", a, err)
		}
	}
	return nil
}

// resumeTries bounds the applications of a Resumable row's action.
const resumeTries = 20

// ghost restarts the named node on an empty volume and returns the observation once it
// answers as a new node of the cluster bus.
func ghost(ctx context.Context, w Observer, name string, before machine.Observation) (machine.Observation, error) {
	cw, ok := w.(ClusterWorld)
	if !ok {
		return before, fmt.Errorf("the row needs a node restarted on an empty volume, which this world cannot do")
	}
	var was string
	for _, n := range before.Nodes {
		if n.Name == name {
			was = n.Valkey.NodeID
		}
	}
	if err := cw.EmptyRestart(ctx, name); err != nil {
		return before, fmt.Errorf("restarting %s on an empty volume: %w", name, err)
	}
	err := w.Await(ctx, name+" back as a new node", func(o machine.Observation) bool {
		for _, n := range o.Nodes {
			if n.Name == name {
				return n.Reachable && n.Valkey.NodeID != "" && n.Valkey.NodeID != was
			}
		}
		return false
	})
	if err != nil {
		return before, err
	}
	return w.Observe(ctx)
}

// node is the node of shard 0 at ordinal ord (pods are named differently in each world).
func node(o machine.Observation, ord int) *machine.Node {
	for i := range o.Nodes {
		if o.Nodes[i].Shard == 0 && o.Nodes[i].Ordinal == ord {
			return &o.Nodes[i]
		}
	}
	return nil
}

func name(o machine.Observation, ord int) string {
	if n := node(o, ord); n != nil {
		return n.Name
	}
	return fmt.Sprintf("<no node at ordinal %d>", ord)
}

func runID(o machine.Observation, ord int) string {
	if n := node(o, ord); n != nil {
		return n.Valkey.RunID
	}
	return ""
}

func ip(o machine.Observation, ord int) string {
	if n := node(o, ord); n != nil {
		return n.Pod.IP
	}
	return ""
}

// primaryOf is the ordinal of the node that answers as the primary (-1: none).
func primaryOf(o machine.Observation) int {
	for _, n := range o.Nodes {
		if n.Reachable && n.Valkey.Role == machine.RolePrimary {
			return n.Ordinal
		}
	}
	return -1
}

// Describe is an observation in one line, for failure messages.
func Describe(o machine.Observation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "objects %+v;", o.Objects)
	for _, n := range o.Nodes {
		fmt.Fprintf(&b, " %s(exists %v reachable %v %s primary=%q link=%v wf=%v sf=%v run=%s vol=%d)", n.Name, n.Pod.Exists, n.Reachable,
			n.Valkey.Role, n.Valkey.PrimaryHost, n.Valkey.LinkUp, n.Valkey.WritesFenced, n.Valkey.SyncFenced, n.Valkey.RunID, n.Pod.VolumeBytes)
		if o.Spec.Mode == machine.ModeCluster {
			fmt.Fprintf(&b, "[id=%s follows=%s slots=%v epoch=%d keys=%d open=%v knows:", n.Valkey.NodeID, n.Valkey.PrimaryID, n.Valkey.Slots, n.Valkey.ConfigEpoch, n.Valkey.Keys, n.Valkey.OpenSlots)
			for _, k := range n.Valkey.Known {
				fmt.Fprintf(&b, " %s@%s(%v %d linked=%v)", k.ID, k.IP, k.Ranges, k.ConfigEpoch, k.Connected)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}
