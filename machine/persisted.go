package machine

import (
	"time"

	"github.com/valkey-fsm/valkey-operator/machine/election"
)

// Persisted is the machine's input that survives restarts: it is written to the
// ValkeyCluster status (status.state and the fields next to it) before any action is taken,
// and read back at the start of every reconcile. Unlike most status fields it is not a report
// but the memory of the machine, so it only changes through a Transition.
type Persisted struct {
	State State
	// Seq is the sequence number of the last transition (history and journal); 0 before any.
	Seq uint64
	// Since is the Observation.Time of the observation that caused the last transition. The
	// machine takes at most one transition per observation: an observation not newer than
	// Since can cause none, so re-delivering one never adds a transition.
	Since time.Time
	// Clock is the Observation.Clock of Since: only an observation of the same clock can be
	// older than the last transition.
	Clock string
	// Shards holds the recorded primary of each shard, indexed by shard number.
	Shards []ShardRecord
	// Op holds the step markers of the operation in progress; zero in Steady and Bootstrapping.
	Op Operation
	// Restored is the ID of the last completed restore, so a request is carried out once.
	Restored string
	// PodsPerShard is the number of pods per shard (1 + replicas) the machine works towards,
	// recorded by bootstrap-complete and by replicas-changed when the spec asks for another
	// count. The owned objects never ask for fewer pods than a recorded primary needs (see
	// scaling.go). 0 in a state persisted before the machine recorded it: what the objects ask
	// for counts then, until the spec changes the count.
	PodsPerShard int
	// Rotation is the password rotation in progress (zero: none); it runs beside the states.
	Rotation Rotation
	// Rotated is the ID of the last completed rotation, so a request is carried out once.
	Rotated string
	// Certificate is the serial of the serving certificate every node that serves TLS was
	// last seen to serve (certificate-reloaded).
	Certificate string
}

// ShardRecord is who the machine recognises as the primary of a shard. Only the recorded
// primary is ever opened for writes, and only its replication history counts as the shard's
// data when a new primary is elected.
type ShardRecord struct {
	Primary string
	// RunID is the process the record is about: a restarted primary is a different process
	// that came up fenced (and possibly empty), so the record no longer applies to it.
	RunID   string
	History History
	// Epoch counts primary changes of the shard, for messages and fencing tokens.
	Epoch uint64
	// ClaimEpoch and ClaimNode are the newest claim on the shard's slots the machine has seen
	// (cluster mode): its config epoch and the cluster-bus ID of the node that made it. Kept
	// because the node may be out of sight when it matters (claims.go). In the Sentinel
	// topology ClaimEpoch is the sentinels' config epoch of the failover that chose the
	// recorded primary (sentinel.go); ClaimNode is unused.
	ClaimEpoch uint64
	ClaimNode  string
	// Deposed lists the pods of the shard whose volumes may hold writes off its line: the
	// primary an unplanned failover replaced (an isolated old primary accepts writes until it
	// is fenced, and a crash leaves on its volume writes its replicas never got), until it is
	// seen holding the line's data (resynced) or none. A restart from an append-only file
	// hides where its data forked (a fresh ID at offset 0), so its key count would count the
	// writes off the line as the line's (deposed.go).
	Deposed []DeposedPod
}

// DeposedPod is a pod whose volume may hold writes off its shard's line (ShardRecord.Deposed).
type DeposedPod struct {
	Pod string
	// Keys is the key count of the node elected to replace it, at the election: how far into
	// the line the deposed pod's data can reach; the rest of it is off the line.
	Keys int64
	// Left is where the line left the deposed pod's data: the elected node's history and its
	// offset + 1 at the election (End is exclusive). A node that reaches Left.ID up to
	// Left.End-1 holds every write of the line the deposed pod may hold.
	Left HistoryLink
	// Resyncing: the machine asked the pod to follow the recorded primary (a full sync
	// replaces its data) and has not seen it on the line yet.
	Resyncing bool
	// ResyncKeys is its key count when its resync was recorded. Fenced and following nothing,
	// only a sync from the line gives it more: with more keys it holds a prefix of the line.
	ResyncKeys int64
}

// History identifies a replication history: its ID (master_replid) and the chain of
// histories it continued, nearest first, as far as the machine has seen them: PrevID below
// PrevEnd (master_replid2 and second_repl_offset, exclusive), then Older. Valkey itself
// reports one link and forgets it when the node restarts; the record keeps the chain so that
// a node still holding an older history of the shard's line stays recognisable. The chain is
// a fixed array so that History (and Operation) stay comparable values.
type History struct {
	ID      string
	PrevID  string
	PrevEnd int64
	// PrevRestarted is the link to PrevID's Restarted (HistoryLink).
	PrevRestarted bool
	// Older continues the chain beyond PrevID, nearest first; unused entries are zero.
	Older [maxOlderLinks]HistoryLink
}

// HistoryLink is one continued history: its ID and End, the offset (exclusive) below which
// the data of the continuing history is that history's (election.Link, where Restarted is
// explained).
type HistoryLink = election.Link

// maxOlderLinks bounds the chain kept in the record beyond PrevID.
const maxOlderLinks = 6

// links returns the chain, nearest first.
func (h History) links() []HistoryLink {
	if h.PrevID == "" {
		return nil
	}
	out := []HistoryLink{{ID: h.PrevID, End: h.PrevEnd, Restarted: h.PrevRestarted}}
	for _, l := range h.Older {
		if l.ID == "" {
			break
		}
		out = append(out, l)
	}
	return out
}

// withLinks returns h with its chain replaced by links (cut to what the record keeps).
func (h History) withLinks(links []HistoryLink) History {
	out := History{ID: h.ID}
	if len(links) == 0 {
		return out
	}
	out.PrevID, out.PrevEnd, out.PrevRestarted = links[0].ID, links[0].End, links[0].Restarted
	copy(out.Older[:], links[1:])
	return out
}

// continuing returns h extended, when its chain ends in prior's ID (or in one of prior's
// links), by the rest of prior's chain; a history identical to prior keeps prior's chain.
func (h History) continuing(prior History) History {
	mine := h.links()
	if h.ID == prior.ID && len(mine) == 0 {
		return prior
	}
	if len(mine) == 0 {
		return h
	}
	theirs := prior.links()
	last := mine[len(mine)-1].ID
	if last == prior.ID {
		mine = append(mine, theirs...)
	} else {
		for i, link := range theirs {
			if link.ID == last {
				mine = append(mine, theirs[i+1:]...)
				break
			}
		}
	}
	return h.withLinks(mine)
}

// Operation is what the machine must remember about the operation in progress because the
// world cannot tell it: whom it is replacing, whom it promoted, what the goal was. Each kind of
// operation has its own part; the state says which parts are in use, and every other part is
// zero:
//
//	FailingOver    Election, and Switchover for a planned one; HandOver while a hand-over is
//	               asked for (a failover keeps the one of the operation it preempted)
//	Rolling        Roll, and HandOver while a primary hands over before its pod is rolled
//	Restoring      Restore
//	Resharding     Reshard
//	Hibernated     Hibernation (From); Bootstrapping: Hibernation while a wake runs
//
// Operation stays a comparable value (no pointers), so that "no operation" is Operation{}.
type Operation struct {
	Election    Election
	Switchover  SwitchoverGoal
	HandOver    HandOverMark
	Roll        Roll
	Restore     Restore
	Reshard     Reshard
	Hibernation Hibernation
}

// Election is a failover or switchover of one shard: the primary it replaces, the last
// process that may have taken writes, and the node elected to take over.
type Election struct {
	// Shard is the shard the failover or switchover is about.
	Shard int
	// Lost and LostRunID name the primary being replaced.
	Lost      string
	LostRunID string
	// Writer and WriterRunID name the last process that may have accepted writes as the
	// shard's primary: the lost primary, or, when an elected node is lost before the
	// failover completed, the primary before it (the elected node never took writes; it
	// holds data as a replica does and counts for the quorum like one). It is the process
	// that must be unable to accept writes before the new primary is opened.
	Writer      string
	WriterRunID string
	// LostHistory is the lost primary's history: candidates must continue it.
	LostHistory History
	// Planned is true for a planned hand-over (a requested switchover, a scale-down's or a
	// leaving primary's hand-over: Operation.Switchover says which), false for a failover.
	Planned bool
	// Candidate is the elected node once candidate-elected has been recorded; the shard's
	// record names it from then on.
	Candidate string
	// Unpromoted is true from the election of a node that was a replica then until
	// candidate-promoted records its new history: until then it took no write and nobody
	// followed it, it is one more node of the lost history, and a re-election after its loss
	// starts from that history again. A node elected while it was a primary already (in
	// cluster mode, or one a person promoted) may have taken writes and been followed under
	// its own history: it never counts as unpromoted. False in a status
	// written before the field existed: the re-election then builds on the record, as it did.
	Unpromoted bool
	// ElectedAt is the observation time of the election. Every visible replica had stopped
	// following the old primary by then, so an isolated old primary may accept writes until
	// FenceTimeout after it, not later.
	ElectedAt time.Time
	// ElectedClock is the clock ElectedAt was read from. An observation of another clock (a
	// new operator incarnation) cannot measure the fence timeout from it: the wait restarts
	// on the new clock (fence-clock-restarted).
	ElectedClock string
	// FenceFrom, when set, is before ElectedAt: every node of the shard visible at the
	// election had been sealed while it had no connection to any primary (Valkey.Sealed), the
	// last of them at FenceFrom, so the writer has had no acknowledgement from any of them
	// since and an isolated writer stops accepting writes FenceTimeout after it. On
	// ElectedClock.
	FenceFrom time.Time
	// KnownFenced is true when the writer cannot accept writes any more (it restarted, its
	// pod is gone, or it was observed demoted), so no fence timeout is needed.
	KnownFenced bool
	// Reseed is true when no node held the shard's data any more and a new, empty history is
	// started (a data loss the machine states explicitly).
	Reseed bool
	// Preempted is the planned operation a failover interrupted (for messages; the machine
	// resumes it from Steady because its progress is visible in the world).
	Preempted State
	// TakenOver is true for a failover of the Sentinel topology the machine carries out
	// itself, because no sentinel can (sentinel-take-over): the Replication topology's
	// election, promotion and fence wait, as in that topology.
	TakenOver bool
}

// SwitchoverGoal is the goal of a planned hand-over (Election.Planned): a requested switchover,
// a scale-down's hand-over or a leaving primary's.
type SwitchoverGoal struct {
	// To is the replica the primary role goes to.
	To string
	// Leaving is true for a hand-over away from a primary whose pod is being deleted
	// (primary-leaving): its goal is only that the role moves before the pod stops.
	Leaving bool
	// Rollout is true for a hand-over before a rollout restarts the primary's pod
	// (roll-hand-over, the Sentinel topology): the rollout resumes from Steady.
	Rollout bool
	// Pods is, for a hand-over that moves a shard's primary off an ordinal a scale-down
	// removes (scale-down-hand-over), the pod count per shard it makes room for; 0 otherwise.
	Pods int
}

// HandOverMark is the node a shard's primary is being handed over to (a switchover, or a rolling
// step), recorded before the hand-over is asked for: if the primary is lost around the
// hand-over, that node may hold writes it took as the new primary under a replication ID
// nobody recorded, and its data is still the shard's. Zero when none is in flight.
type HandOverMark struct {
	Shard int
	To    string
}

// Roll is a rollout: the revision every pod is restarted onto.
type Roll struct {
	Revision string
}

// Restore is a restore in progress.
type Restore struct {
	// Request is the restore request's ID.
	Request string
	// Snapshot is the snapshot being restored.
	Snapshot string
	// GiveBack is true while a restore can still hand the cluster back as it was: it was asked
	// of a serving (Steady) cluster and no shard has been recorded as loaded. A restore whose
	// snapshot is then refused gives the cluster back only if, besides, every shard's recorded
	// primary still answers with the data it had (restore-given-back); a new cluster's restore
	// never does (it would open empty).
	GiveBack bool
}

// Reshard is a resharding: the shard count it works towards.
type Reshard struct {
	Shards int
}

// Hibernation is what a hibernation keeps for the wake.
type Hibernation struct {
	// Wake is true while a bootstrap wakes a hibernated cluster: every kept volume may hold
	// the newest data, so every node must answer before a shard's first node is chosen.
	Wake bool
	// From names, per shard and separated by spaces ("-" where none), the node whose data
	// is the shard's newest when a hibernation stopped the pods: its recorded primary, serving
	// as the recorded process with client writes closed and every replica that followed it
	// caught up (hibernate-caught-up records it before the pods are asked to stop). The wake
	// starts each shard from it: key counts cannot tell a replica that was not linked, or
	// that missed writes acknowledged after the catch-up, from the primary. "" until then.
	From string
}
