package sim

import "fmt"

// StepKind says what happens in one step (one tick) of a schedule.
type StepKind string

const (
	// StepOperator gives the operator one unit of work: a reconcile (observe, decide,
	// persist) or one queued action.
	StepOperator StepKind = "operator"
	// StepWrite has the client write one key.
	StepWrite StepKind = "write"
	// StepFault injects a fault.
	StepFault StepKind = "fault"
	// StepUser changes the spec or takes a backup.
	StepUser StepKind = "user"
	// StepIdle lets time pass.
	StepIdle StepKind = "idle"
)

// Step is one tick of a schedule: plain data.
type Step struct {
	Kind  StepKind
	Write Write
	Fault Fault
	User  UserAction
}

// Write is a client write. The client tries the nodes of the key's shard starting at ordinal
// Start and writes to the first that accepts (as a client that follows redirections would);
// with Wait it then runs WAIT MinSyncReplicas and records whether that acknowledged.
type Write struct {
	Key   int
	Start int
	Wait  bool
}

// UserActionKind is a change a user makes.
type UserActionKind string

const (
	UserRollout    UserActionKind = "rollout"
	UserSwitchover UserActionKind = "switchover"
	UserBackup     UserActionKind = "backup"
	UserRestore    UserActionKind = "restore"
	UserReshard    UserActionKind = "reshard"
	// UserScaleUp and UserScaleDown change the replica count per shard by one, within the
	// topology's MinReplicas and MaxReplicas.
	UserScaleUp   UserActionKind = "scale-up"
	UserScaleDown UserActionKind = "scale-down"
	// UserRecreate deletes the ValkeyCluster and applies it again (a GitOps re-sync, a
	// namespace restore): its status and the operator's memory are gone, its pods are
	// deleted, its claims are kept (with persistence the volumes keep the data), except the
	// claim of ordinal To of shard 0 when To >= 0, which is lost with its data.
	UserRecreate UserActionKind = "recreate"
	// UserGrowStorage asks for data volumes one GiB larger.
	UserGrowStorage UserActionKind = "grow-storage"
	// UserRotate asks for a rotation of every password the operator manages; UserRetire ends
	// the grace period of the rotation in progress (the user's word that clients moved over).
	UserRotate UserActionKind = "rotate"
	UserRetire UserActionKind = "retire-passwords"
	// UserRenewCertificate puts a new serving certificate in the TLS Secret (the first one
	// turns TLS on: processes that start from then on serve it).
	UserRenewCertificate UserActionKind = "renew-certificate"
	// UserHibernate asks for the cluster to hibernate (spec.hibernate; topologies that persist
	// their data only, as the API allows), UserWake for it to wake.
	UserHibernate UserActionKind = "hibernate"
	UserWake      UserActionKind = "wake"
	// UserScaleSentinels asks for To sentinels (the Sentinel topology).
	UserScaleSentinels UserActionKind = "sentinels"
)

// spoiledRestore names, by To, how a restore's backup was spoiled.
var spoiledRestore = []string{"", ", files replaced after the check", ", files replaced after the check, found after emptying"}

// UserActionKinds lists the kinds in generator order.
var UserActionKinds = []UserActionKind{UserRollout, UserSwitchover, UserBackup, UserRestore, UserReshard, UserScaleUp, UserScaleDown, UserRecreate, UserGrowStorage, UserRotate, UserRetire, UserRenewCertificate, UserHibernate, UserWake, UserScaleSentinels}

// UserAction is one user change: a new revision, a switchover request (To ordinal of shard
// 0, or withdrawn with Clear), a backup, a restore of the latest backup, a shard count, one
// replica more or less per shard.
//
// A restore with To > 0 restores a backup whose files are replaced in the store after they
// were checked (a person, a lifecycle rule, a bug): every load of it is refused for its
// content, before the node is touched (To 1) or after the node was emptied for the load (To
// 2: cluster mode's key-by-key load reads the file as it loads; the full sync of the other
// modes is cut off before the node changes, and the node, detached, shifts to a new ID).
type UserAction struct {
	Kind   UserActionKind
	To     int
	Clear  bool
	Shards int
}

func (s Step) String() string {
	switch s.Kind {
	case StepWrite:
		w := "write"
		if s.Write.Wait {
			w = "write+WAIT"
		}
		return fmt.Sprintf("%s key %d (from ordinal %d)", w, s.Write.Key, s.Write.Start)
	case StepFault:
		return "fault: " + s.Fault.String()
	case StepUser:
		switch s.User.Kind {
		case UserSwitchover:
			if s.User.Clear {
				return "user: withdraw switchover"
			}
			return fmt.Sprintf("user: switchover shard 0 to %s", nodeName(0, s.User.To))
		case UserReshard:
			return fmt.Sprintf("user: reshard to %d shards", s.User.Shards)
		case UserScaleSentinels:
			return fmt.Sprintf("user: sentinels to %d", s.User.To)
		case UserRestore:
			return "user: restore" + spoiledRestore[s.User.To]
		case UserRecreate:
			if s.User.To >= 0 {
				return fmt.Sprintf("user: recreate losing the claim of %s", nodeName(0, s.User.To))
			}
			return "user: recreate"
		default:
			return "user: " + string(s.User.Kind)
		}
	default:
		return string(s.Kind)
	}
}
