package machine

// The hand-written prose of docs/state-machine.md. It lives next to the code it describes so
// that a change of a rule and of its description land in the same commit; diagram.go puts it
// together with what is generated from the table.

// stateDoc says what the machine does while in a state.
var stateDoc = map[State]string{
	Bootstrapping: `A new cluster. The machine asks for the owned objects (EnsureObjects) and wires each shard to
its first node: that node is promoted (it serves replicas, client writes stay fenced), every other
node follows it, and in cluster mode every node joins the cluster bus and the first node gets its
planned slots. A cluster applied again on volumes kept from a deleted one may find data: the first
node is then elected, never taken by ordinal. Nothing is promoted until every node whose volume is
older than the cluster answers; if any node holds keys, the node whose data contains every other's
(by replication history, by key count where nodes restarted from append-only files report none) is
recorded first (bootstrap-elected), and the others sync from it. When the data forked, or a node with
an old volume never answers, the machine waits and says why until the user names the pod whose data
wins (annotation valkey.fsm.dev/bootstrap-from; the history records the discarded data). Without
data the choice is free: a node that already serves replicas is preferred so that an operator
restart does not move it. bootstrap-complete records the number of pods per shard the spec asks for.`,
	Steady: `Every shard has a recorded primary. The machine converges the world to the record: stray
masters (a returning old primary, a node restarted empty) are fenced and demoted, replicas that
follow anything else (an old IP, an old primary) are re-pointed, and the recorded primary is opened
for writes. A change of the replica count is recorded here (replicas-changed) and carried out by
the objects: new pods at once, fewer pods only once every recorded primary answers on an ordinal
that stays (scale-down-hand-over moves it first). Planned operations start from here only when the
cluster is converged, one at a time, in this order: the hand-over a recorded scale-down waits for,
restore, switchover, rollout, resharding.`,
	FailingOver: `The primary of one shard is being replaced. Unplanned: (1) freeze: every visible node that
follows anything is detached, so offsets stop moving and an isolated old primary loses the replicas
its min-replicas-to-write needs; (2) elect the node whose data contains every other candidate's and
record it as the shard's primary (candidate-elected) before touching it; (3) promote it (serves
replicas, writes still fenced), record its new replication ID (candidate-promoted) and re-point the
others to it; (4) wait until the old primary cannot accept writes, then failover-complete records
the new primary's history. Planned (a switchover, or a primary moving off an ordinal a scale-down
removes): one FAILOVER TO hand-over to the requested (or most advanced surviving), caught-up
replica, recorded beforehand.`,
	Rolling: `Pods are restarted onto the target revision, one at a time and only from a converged cluster:
replicas first, then each shard's primary after a hand-over (FAILOVER TO) to its most advanced
linked replica. A shard without replicas restarts its primary in place (without persistence that
loses its data, which the action says). Progress is the pods' revisions, so nothing is lost when
the operator restarts or a failover interrupts.`,
	Resharding: `Cluster mode. New shards' pods are created and each is wired to its first node and recorded
(shard-added); then, from a converged cluster, every slot range the balanced plan moves is
migrated at once (each shard keeps its home slots, then its lowest, up to its share, so no more
moves than the balance needs; a slot left open by an unfinished migration is first finished
towards where it was going, and is reason enough to reshard); finally the nodes of removed shards leave the cluster bus, their records are
forgotten (shard-removed) and their pods and claims are deleted. Every step is visible in the
world, so the operation resumes after a restart or a failover.`,
	Restoring: `Every shard is reloaded from a snapshot: masters of shards not restored yet are fenced, one
node per shard loads the snapshot (a new replication history), snapshot-loaded records it, the
others resync from it. Steady then opens the restored primaries for writes. Writes acknowledged
after the snapshot was taken are discarded; that is what a restore is. A new cluster asked to
restore goes from Bootstrapping to Restoring once wired, so it never opens for writes before the
snapshot is loaded. A newer checked restore request replaces the one under way. A load refused
for what the snapshot holds (its files changed after the check) is never tried again: a restore
asked of a serving cluster, before any shard was recorded as loaded and while every recorded
primary still answers as the same process under its history (its data unchanged), gives the
cluster back as it was (restore-given-back); otherwise it waits, writes closed, for a snapshot that
loads.`,
	Hibernated: `Every pod stops and the claims keep the data (spec.hibernate, profile Durable only). Each
recorded primary is closed to client writes (close-writes; replication goes on), and once every
replica that follows it holds all it wrote, hibernate-caught-up records each shard's primary that
served as the node to wake from, then the StatefulSets ask for no pod, with whenScaled Retain so
that the claims stay; Valkey saves its data as it shuts down. Setting spec.hibernate to false
wakes the cluster (wake-requested): it bootstraps on its kept claims, as many pods per shard (and
shards) as ran at the stop even where the spec now asks for fewer (a scale-down or a resharding
removes them once Steady),
chooses no shard's first node before every pod answers, and starts each shard from the node recorded to wake from while it holds
data (key counts cannot tell a replica that was not linked from the primary); a shard without one
is elected by its data as a re-created cluster is. Cleared before the pods stopped, while every recorded primary still serves, the
hibernation is cancelled instead (hibernate-cancelled): the records are kept and writes reopen.`,
}

// rulesDoc is the part of the document that states the safety rules.
const rulesDoc = `## Rules

### What the machine assumes of the nodes
The pod template makes every Valkey process start fenced (the application and replication ACL users
are off until the operator opens them) and as a replica of nothing (a placeholder that never
answers). Started like that from an RDB file, Valkey restores the replication id and offset saved
with its data, so the node still names the history its data belongs to. Started from an append-only
file (the Durable profile), it does not (Valkey 8 saves neither there): the node reports a fresh id
at offset 0 like an empty node, and only its key count (INFO keyspace) says it holds data; its place
in the history is unknown (unmeasured). A node restarted without its data reports a fresh id at
offset 0 and no keys. Every action aimed at a process carries its run id and is refused by the
actuator if the node runs another process by then.

### One transition per observation
Decide takes at most one transition per observation: an observation that is not newer than the
one that caused the last transition (persisted as ` + "`Since`" + `) causes none, and an older one is stale
and causes nothing at all. Re-delivering an observation therefore never adds a transition, and the
actions of a new state are always carried out (and observed) before the next transition.

### Record before acting
Whatever the machine will need to know after a crash is recorded by a transition before the action
that depends on it is asked for: the elected node before it is promoted (candidate-elected), its new
replication id as soon as it serves (candidate-promoted), the replica a primary is handed over to
before FAILOVER TO is sent (hand-over-started, scale-down-hand-over, or the switchover request
itself), the pod count per shard before the objects are asked for it (replicas-changed).

### One operation at a time
FailingOver, Rolling, Resharding and Restoring are operations; only one runs. Planned operations
start only from Steady and only from a converged cluster (every recorded primary answers as the
recorded process, open for writes; every other pod exists, follows it and is linked), in this order:
the hand-over a recorded scale-down waits for, restore, switchover, rollout, resharding (switchover,
rollout and resharding also wait while a scale-down waits for its hand-over). A planned request
that arrives during an operation waits for Steady; so does a change of the replica count. A lost
primary of another shard during a failover waits for that failover to finish.

### Failover pre-empts rolling and resharding
primary-lost is tried from Steady, Rolling and Resharding before any planned rule (only
primary-handed-over, which records a hand-over that already happened, comes first). The interrupted
operation is not resumed from FailingOver: failover-complete returns to Steady, which re-detects the
remaining work (pods still on the old revision, slots not yet where the plan wants them) and starts
the operation again with a fresh plan. Nothing of the interrupted operation is lost because its
progress lives in the world, not in the machine; ` + "`Op.Election.Preempted`" + ` only names it in messages. A hand-over
the interrupted rolling step had recorded is carried into the failover (see below). Restoring is not
pre-empted: it re-elects every shard's primary itself, and its masters are fenced anyway.

### Deposed pods during an operation
deposed-resync and deposed-resynced are self-loops of every state with a recorded primary, but in
Rolling and Resharding they fire only for a pod on a kept claim that is started by hand. A planned
operation starts only from a converged cluster, where every pod the objects ask for follows its
recorded primary with the link up and so holds the line's data: the transition that starts it
forgets the marks of those pods (any transition forgets a deposed pod that answers on the line). A
failover during the operation ends it (FailingOver, then Steady), and its marks are settled there.
What is left is a pod the objects do not ask for: a claim kept beyond them (a scale-down's claim
not deleted yet), deposed by a failover that could not weigh it. The machine changes no pod count
during an operation, so that pod comes back in the middle of one only when the StatefulSets are
scaled behind the operator's back (kubectl scale). It comes back off the line, and resyncs
(deposed-resync), only when its volume still holds data, which needs persistence; otherwise it
comes back empty and is forgotten at once (deposed-resynced). In cluster mode, where Resharding
runs, a scale-down empties the nodes it removes (remove-node) before their pods go, so a claim it
kept comes back empty too: a resharding meets a deposed pod with data only on a claim whose node
left the cluster otherwise.

### A spec change in the middle of an operation
A planned operation whose goal the spec moves is aborted to Steady (spec-changed: another revision
during Rolling, another shard count during Resharding, another replica count during a scale-down
hand-over; switchover-stale: the switchover request was withdrawn or names another node, or the
target of a planned hand-over stopped being a caught-up replica). Steady re-plans
from the new spec on the next observation. Pods already rolled and slots already moved stay as they
are. An abort is refused while a recorded hand-over may have happened (the recorded primary is not
answering as the same primary of the same history): the operation then ends by failover-complete,
primary-handed-over or primary-lost, never by forgetting where the newest writes may be. An
unplanned failover is never aborted by a spec change: its job is to restore a writable primary. A
restore runs to completion; a newer restore request is carried out after it, and a restore starts
only into a cluster with as many shards as the snapshot.

### Scaling
The number of pods per shard (1 + replicas) the machine works towards is recorded
(` + "`PodsPerShard`" + `): bootstrap-complete records the spec's, and replicas-changed, a Steady self-loop,
records each new count the spec asks for, once (it fires only while the spec and the record
differ), so every change shows in the history. A cluster persisted before the count was recorded
counts what its objects ask for until the spec changes it. A count the spec changes during
another operation is recorded when Steady is back.

Scale-up: the objects ask for the new pods at once; they start fenced, as replicas of nothing,
and Steady makes them follow the primary.

Scale-down: a StatefulSet removes its highest ordinals, so the objects ask for fewer pods only in
Steady and only once every shard's recorded primary answers, as the recorded process, on an
ordinal that stays, and every answering node on an ordinal that stays follows it with the link up
(the pods removed are then never the primary nor the only replicas that hold its writes); in
cluster mode the nodes being removed first leave the cluster bus (remove-node), so the others do
not keep them as failed nodes. A primary that does not answer blocks the shrink: the replicas
being removed may hold writes a failover needs. A primary on a removed ordinal is handed over
first: scale-down-hand-over records a planned hand-over (FailingOver, as a switchover, with its
rules) to the most advanced caught-up replica on an ordinal that stays, from a converged cluster;
failover-complete records the new primary and Steady then shrinks the objects. While a scale-down
waits for its hand-over, switchovers, rollouts and reshardings wait too. The actuator refuses a
shrink that would remove a pod answering as a primary (a person may have run FAILOVER TO since
the decision), and one whose shards' recorded primaries (named in the action) no longer run as
the processes it was decided for (one that restarted may have come back empty, and the pods being
removed may hold the last copies of its writes), as actions aimed at a process refuse another run
id.

Nodes on removed ordinals are never hand-over targets (nor switchover targets). A lost primary
pre-empts the hand-over (primary-lost, which keeps the recorded target as it does for any
hand-over); a failover elects a node on a removed ordinal only when no node on an ordinal that
stays holds all the data (safety first), and that node is then handed over from in turn. A new
replica count during the hand-over aborts it (spec-changed) unless it may have happened; Steady
then records the new count. A pod a scale-down removed whose volume claim the StatefulSet
retained comes back with its old data on a later scale-up, as a node restarted from its volume
does. Pods gone because the objects no longer ask for their ordinal do not count as unseen nodes
for a failover's quorum.

### Password rotation
A rotation replaces the passwords of named users (the application's, the operator's, the
replication user's) without restarting a node. It runs beside the states, as Steady self-loops,
and only in Steady: a failover, a rollout or a restore takes priority and the rotation resumes
where its record (` + "`Rotation`" + `, with the phase) says. The machine never sees a password; the
operator prepares the new ones in a Secret of the rotation and reports, per node, whether it
accepts the new and the previous password of each rotated user and which one its masterauth
is. rotation-requested records the request (once per ID: ` + "`Rotated`" + ` is the last one
completed) and add-passwords gives every running node the new password beside the old one;
nothing is published, so clients, replicas and the operator keep using the old one, and a node
that restarts meanwhile starts from the users' file (old password) and is given the new one
again. passwords-accepted fires only once every running node answers and accepts the new
passwords (a node whose pod does not run starts from the file, which each phase keeps
consistent; one that runs and does not answer holds the rotation back): publish-passwords then
writes the auth Secret clients read and a users' file that accepts both, and switch-master-auth
moves each node's masterauth to the new replication password. grace-ended, once the grace
period passed on this incarnation's clock (grace-clock-restarted starts it again on another
one) or the user asked to retire now, and every running node accepts the new passwords and
authenticates with the new one, drops the old ones from the file and from every node
(retire-passwords); rotation-complete when no running node accepts them any more. A replica
therefore never authenticates with a password its primary does not accept, before or after a
failover in the middle of a rotation.

### Certificate reload
A renewed serving certificate is taken up without a restart, in Steady: each node that serves TLS
reports, over a fresh handshake, the serial of the certificate it serves; one that serves another
than the TLS Secret's (once the operator accepted it: it verifies against its CA now) is told to
load its files again (reload-certificate), decided again until the mounted Secret has reached the
node. certificate-reloaded records the serial (` + "`Certificate`" + `) once every running node
answers and every one that serves TLS serves it, so history says when a renewal reached the whole
cluster.

### Closing writes for a final backup
A ValkeyCluster deleted with spec.deletion.finalBackup keeps running until its last backup
completed, and that backup must hold every write a primary acknowledged. The operator observes
the deletion (Spec.CloseWrites): in every state that opens writes, each recorded primary is
closed to client writes instead (close-writes, as for a hibernation; replication goes on, so the
replicas catch up) and never opened again; a failover meanwhile promotes a node whose writes
stay closed. Planned operations do not start: a closed primary is not converged. No transition is
recorded, since the record does not change. The backup itself is no action of the machine (it
changes nothing on the nodes): the operator creates it once it has seen every recorded primary of
a Steady cluster closed, and lets the cluster go once it completed (docs/backup.md).

### When not to fail over
- The recorded primary answers as the same process and is a primary: never, whatever else is wrong.
- It does not answer but fewer than FailureThreshold consecutive probes failed: wait.
- It does not answer the operator, but a replica that follows it heard from it within the last 2 s
  (its link is up and the primary pings every second): the operator is cut off, not the primary;
  failing over would cut a serving primary off its replicas. Wait; once no replica hears from it,
  the failover goes ahead.
- Too little of the shard is visible: at most MinSyncReplicas-1 nodes besides the last primary that
  took writes (none when MinSyncReplicas is 0) may be unreachable, loading, or (with persistence)
  without a running pod. A write acknowledged with WAIT MinSyncReplicas is on that many other nodes,
  so at least one of them is
  seen; and an isolated old primary keeps fewer replicas than its min-replicas-to-write and stops
  accepting writes. When an elected node is lost before the failover completed, it never took
  writes: it counts like a replica and the quorum still leaves out only the primary before it.
- No node can be shown to hold all the others' data (a fork), or no node holds the shard's history
  while some node is unseen: wait, the unseen one may hold the data.

A primary counts as gone, without waiting for probes, when its pod is missing or not running, when
it answers with another run id (it restarted: a restarted node comes up fenced and maybe empty), or
when it answers as a replica (unless it handed over to a replica that continues its history, which
primary-handed-over records).

### Which node may be promoted
- Only a node that answers, is not loading, and holds data of the shard's lineage: the recorded
  history, the chain of histories it continued (each below where it was left; the record keeps up
  to seven links because a restart makes Valkey forget master_replid2), and every history that
  continues one of them as the observed nodes report it, so that a node which followed a
  hand-over target and then restarted still counts. A node still in a history of the chain counts
  only below the point where the record left it, whatever that history itself continued.
- Also, compared by offset, a node that takes no writes (fenced, or a replica), follows nothing
  and holds data, when it is the lost primary as a new process, the node a recorded hand-over went
  to, a node in the history of one of these two, or a node whose history the lineage cannot place
  at all (its reported ancestry does not reach the lineage): only the recorded
  primary is ever opened for writes (and one replication id has one writer), so such
  data is the shard's one line of writes as far as its offset reaches (a node the machine promoted
  and that restarted before its new id was recorded, say). Their ids join the lineage. A node of
  a history the lineage left behind (a known fork: an isolated old primary's later writes) is
  never a candidate. After a restore, only a node whose data was loaded from it or synced since
  is trusted by offset: older data (a volume a scale-up brought back) holds what the restore
  discarded.
- Among the candidates, only the node whose data contains every other candidate's, judged as Valkey
  judges a partial resync (same replication id and offset not beyond, or a previous id below
  second_repl_offset, following the chain of continued histories). An empty node (offset 0, no
  keys) is contained in anything. With appendfsync always, the last writer restarted from its own
  append-only file (complete) contains every node of the recorded history, however far it got:
  every write went through the writer, and was fsynced before it was acknowledged; its new history
  is recorded as continuing all of the old one. With everysec (the default) the write to the file
  may be postponed past the reply for up to two seconds, so a killed writer's file may lack writes a
  replica acknowledged: it is one more unmeasured node. Any other comparison with an unmeasured node can
  only go by key count, and an election that rested on it says so in its message (an overwrite
  adds no key, so key counts can misjudge); the record of a node so elected links the lost
  history up to the furthest node of it the election judged, so that those nodes stay part of the
  shard's line for the next election. Never one behind another eligible
  node, never across a fork: when no candidate contains all others, nobody is promoted. Among nodes
  holding the same data, one on an ordinal a recorded scale-down keeps is preferred.
- Offsets are compared only after every visible node stopped following anything (detached), so they
  no longer move. The elected node is recorded before it is promoted; until it serves, a node that
  shows up holding strictly more replaces it in the record.
- An empty restarted node has a fresh replication id, no previous one and no keys: it is never a
  candidate.
  Only when every node of the shard is visible and none holds the lineage is the shard's data gone
  whatever the machine does; then the node holding the most data (by offset, then key count;
  lowest ordinal among equals)
  starts a new history and the transition messages say DATA LOST.

### Fencing
Nodes start fenced. Only the recorded primary is opened for writes, and only from Steady, Rolling or
Resharding. Until the elected node is promoted, every master of the shard open for writes is fenced.
A promoted node serves replicas at once but is opened for writes only after failover-complete, which
requires the old primary to be unable to accept writes: known dead (pod gone, restarted), observed
fenced or demoted, or FenceTimeout (min-replicas-max-lag plus a margin) after the election, by which
time every visible replica had been detached from it; or FenceTimeout after the last seal, when every
node visible at the election had been sealed while it had no connection to any primary (replicas
whose link is down are sealed from the primary's first failed probe: their replication password is
replaced, so no primary can count them from then on). Any other master is fenced and then demoted.
A restore loads a snapshot into a shard only once its recorded primary is observed fenced or known
dead.

### Empty nodes never feed replicas
A node restarted without its data comes up fenced for replication, so its old replicas cannot
full-sync its empty data set. The machine never opens replication on it: it is never elected, and
Steady demotes it and resyncs it from the recorded primary.

### Actions are idempotent
Actions are re-derived from every observation, so a failed or lost action is decided again, and an
action applied twice does no harm.

### A failed action blocks only what depends on it
A decision's actions run in order. When one fails, the later ones that involve a node it may have
left in between are skipped (after a failed fence, everything is), and the others still run. An
action that failed waits before its next try: the operator's retry interval, doubled with each
failure in a row, at most a minute; status.failingActions shows each one with its count, last
error and next try. The simulator runs the same plan (machine.ActPlan) without the wait, so every
schedule retries as often as the machine decides.

### One turn, the same in the operator and the simulator
Each turn observes, decides, persists the transition, journals it and carries out the actions, in
that order, through one driver (machine.StartTurn) that the operator and the simulator both run
with their own world. A transition that cannot be persisted (the status changed meanwhile) ends
the turn: none of its actions run and the next turn observes again. Actions run only for the
state just persisted, and a turn is settled when it made no transition, planned no action and
waits for nothing.

### Shards leave the cluster bus before their objects go
When the objects run more shards than the machine wants (a resharding down, a spec that changed
during a bootstrap, a cluster re-created on kept claims with fewer shards), the shards that go
keep their objects until each of their pods answers, serves no slot, holds no key and has left
the cluster bus (remove-node). A pod that does not answer, or holds keys, is waited for and
status says why: deleting it would delete its claim.

### Journal and history
Every transition is persisted before its actions run: status.state and the persisted fields, one
condition per state (exactly one True, reason = the event in CamelCase), a bounded status.history
(newest last, sequence numbers without gaps) and a journal entry (event, observation summary,
transition, persisted state after). Folding the journal through the table rebuilds the persisted
state and the whole history.

### What the operator does beside the machine
A few writes are not the machine's actions, because none of them changes which node is a primary,
which node holds which data, or whether clients may write. Each is idempotent, recomputed from the
latest observation every turn, and reported in status, Events and logs when it fails; none appears
in the history.
- **Users of ValkeyACL resources**: each node gets the users their resources ask for (ACL SETUSER,
  and ACL DELUSER for users no resource asks for any more) and the users file its pod restarts
  with. The operator's own users (probe, replication, application) are the machine's: they change
  only through a password rotation.
- **Live configuration**: spec.config's live directives, and the directives that follow each
  node's reported version, are set with CONFIG SET on every process that has not got the current
  set. They change neither roles nor data; a refused value leaves the old one and is reported.
- **Role labels**: each pod's role label (which Service sends it traffic) is derived from the
  recorded primary and what the node reports: only the recorded primary, open for writes, is
  labelled primary. It mirrors the machine's record and decides nothing.
- **Replication user rules after a slot migration**: outside Resharding, a node whose replication
  user still carries the rules an atomic slot migration widened gets the narrow rules back.
- **Support objects**: the Services, the ConfigMap, the PodDisruptionBudget, the NetworkPolicy
  and the Certificate are written as the spec asks on every turn (no write when they are so), and
  repaired when they drift. None of them holds data or picks a primary; the StatefulSets, which
  decide which pods run, change only through the machine's ensure-objects.
- **The auth Secret**: it is made for a new cluster, and a deleted or emptied one is put back
  with the passwords the running nodes use. Putting it back changes no node: a new password
  reaches the nodes only through a rotation.
- **Requests answered**: the switchover, failover-without and rotation annotations are removed
  once the machine has answered them (done, refused or no longer needed), and the finalizer is
  added and removed. They are the user's requests to the machine, not its decisions.
- **The final backup**: a cluster deleted with a final backup gets a ValkeyBackup made for it;
  the backup runs beside the machine as any backup does.
- **Backups**: a ValkeyBackup reads each shard's snapshot from a replica that is in sync (the primary
  when none is); it changes no role and no data. Closing writes for a final backup is the machine's action.
- **Reports**: status fields that describe the world (nodes, ready counts, waiting reasons,
  Ready, Progressing and Degraded), Events, metrics and the pod-trouble reports only describe.
`
