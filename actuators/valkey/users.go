package valkey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// The ACL users every node starts with. Their on/off state is the fence the machine reasons
// about, and every node starts with both client and replication users OFF: a process that
// (re)starts (possibly empty, when it has no persistence) can neither take client writes nor
// serve as a sync source until the operator has looked at it and given it a role.
const (
	// UserOperator is the operator's own user: always on, the commands the operator sends.
	UserOperator = "operator"
	// UserClient is the user applications authenticate as (AUTH <password> uses default).
	// Off = WritesFenced.
	UserClient = "default"
	// UserReplication is what replicas authenticate as when they sync (masteruser). Off on a
	// node = SyncFenced: no replica can full-sync from it.
	UserReplication = "replication"
	// UserProbe is what the pods' readiness probe authenticates as: PING and nothing else (no
	// keys, no channels, no other command), always on. Its password is generated once and
	// never rotated: a pod's probe must keep working whatever a rotation of the other users
	// does (a kubelet refreshes a mounted Secret up to a minute or more after it changed, and a
	// rotation may retire an old password at once), and it opens nothing but PING.
	UserProbe = "probe"
	// UserSentinel is what the sentinels of the Sentinel topology authenticate as, on the
	// data nodes (sentinelRules) and to each other (sentinel-user): always on, where it
	// exists. Not a fence: Sentinel must reach every node to watch and reconfigure it.
	UserSentinel = "sentinel"
)

// The users' rules (docs/security.md lists them). Applications get every command but the
// administrative ones (@admin: ACL SETUSER, CONFIG, REPLICAOF/SLAVEOF, FAILOVER, SHUTDOWN,
// DEBUG, MODULE, MONITOR, CLIENT KILL/PAUSE/LIST, SAVE/BGSAVE/BGREWRITEAOF, PSYNC/SYNC,
// cluster-mutating CLUSTER subcommands, ...): with them, anyone holding the application
// password could lock the operator out, split writes (REPLICAOF NO ONE on a replica) or stop
// a node. The operator gets the commands its code sends and nothing else, and no channels; it
// writes no key, and reads keys only for the data digest of a node restarted from its
// append-only file (digest.go: SCAN, TYPE, DUMP, ...); the replication user what a replica
// sends to its primary.
const (
	clientRules      = "~* &* +@all -@admin"
	operatorRules    = "resetkeys resetchannels -@all +hello +auth +ping +echo +select +info +role +dbsize +client|kill +client|pause +client|unpause +client|setinfo +client|setname +client|id +acl|getuser +acl|setuser +acl|whoami +replicaof +config|get +config|set +failover +cluster|nodes +cluster|info +cluster|myid +cluster|meet +cluster|addslotsrange +cluster|replicate +cluster|failover +cluster|forget +cluster|reset +cluster|setslot +cluster|getkeysinslot +cluster|bumpepoch +multi +exec ~* +migrate +restore-asking +asking +debug|digest +scan +type +pexpiretime +memory|usage +dump +hgetall +smembers +zrange +lrange"
	replicationRules = "+psync +sync +replconf +ping"
	probeRules       = "resetkeys resetchannels -@all +ping +role"
)

// Passwords are the secrets of the three users.
type Passwords struct {
	Operator, Client, Replication string
	// Probe is the readiness probe's user's (UserProbe): never rotated, so it is no user a
	// rotation names ("" where no probe user is wanted).
	Probe string
	// Sentinel is the sentinels' user's (UserSentinel; "" outside the Sentinel topology).
	Sentinel string
}

// ProbeUser is the readiness probe's user with password: on, PING and ROLE only (the preStop
// hook asks ROLE whether the node is still a primary with replicas). It is written into
// the users' file and given live with the ValkeyACL users (nodes started by an older operator,
// or a probe password put back after it was lost).
func ProbeUser(password string) ACLUser {
	return ACLUser{Name: UserProbe, Enabled: true, Hashes: []string{hashed(password)}, Rules: strings.Fields(probeRules)}
}

// hashed is a user's password as an ACL rule: its SHA-256 (#<hex>), never the text. The
// file then holds no password a reader could use, and a user-supplied password with spaces,
// a newline or anything else cannot break out of its rule (a newline would inject a
// directive). Only masterauth, which Valkey must send, is the text: it is the generated
// replication password (letters and digits).
func hashed(password string) string {
	sum := sha256.Sum256([]byte(password))
	return "#" + hex.EncodeToString(sum[:])
}

// AuthConfig is the valkey.conf fragment (kept in a Secret and included from valkey.conf)
// that defines the users, all but the operator's off, and the credentials a replica uses,
// then the ValkeyACL users (users), with which restarted and new pods start.
func AuthConfig(p Passwords, users ...ACLUser) string {
	return AuthConfigAccepting(p, Passwords{}, users...)
}

// AuthConfigAccepting is AuthConfig whose users also accept the passwords in also (a
// password rotation: the new ones before they are published, the old ones during the grace
// period; "" adds none). masterauth is p's.
func AuthConfigAccepting(p Passwords, also Passwords, users ...ACLUser) string {
	var b strings.Builder
	pass := func(user string) string {
		out := hashed(Of(p, user))
		if extra := Of(also, user); extra != "" && extra != Of(p, user) {
			out += " " + hashed(extra)
		}
		return out
	}
	fmt.Fprintf(&b, "user %s on %s %s %s\n", UserOperator, pass(UserOperator), operatorRules, aclCommands)
	clientPass := pass(UserClient)
	if p.Client == "" {
		clientPass = "nopass" // spec.auth.enabled=false: the on/off fence still applies
	}
	rules := clientRules
	if p.Sentinel != "" {
		// A Sentinel-aware client asks the node the sentinels named for its ROLE before it
		// trusts it as the primary (valkey.io/topics/sentinel-clients); ROLE is @admin.
		rules += " +role"
	}
	fmt.Fprintf(&b, "user %s off %s %s\n", UserClient, clientPass, rules)
	// PSYNC/SYNC/REPLCONF/PING are what a replica sends to its primary.
	fmt.Fprintf(&b, "user %s off %s %s\n", UserReplication, pass(UserReplication), replicationRules)
	if p.Probe != "" {
		b.WriteString(ProbeUser(p.Probe).configLine())
	}
	if p.Sentinel != "" {
		fmt.Fprintf(&b, "user %s on %s %s\n", UserSentinel, hashed(p.Sentinel), sentinelRules)
	}
	fmt.Fprintf(&b, "masteruser %s\n", UserReplication)
	fmt.Fprintf(&b, "masterauth %s\n", p.Replication)
	for _, u := range users {
		b.WriteString(u.configLine())
	}
	return b.String()
}

// snapshotCommands are what reading a snapshot the way a replica does takes (SYNC with
// REPLCONF capa eof and rdb-only): the operator's user gets them on the node a backup reads
// from. Not the replication user: it is off on every node but the primary (the sync fence), and
// only Valkey nodes use it; a replica never authenticates as the operator.
const snapshotCommands = "+sync +replconf"

// AllowSnapshots lets the operator's user read a snapshot of the node at podIP. It is given
// live before each backup rather than in the users' file, so that nodes started by an older
// operator have it too; a restarted node loses it until the next backup.
func (p *Pool) AllowSnapshots(ctx context.Context, podIP string) error {
	return p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(strings.Fields(snapshotCommands)...).Build()).Error()
	})
}

// restoreCommands are what replaying a snapshot into a cluster-mode node takes
// (backup.LoadByRestore: emptying it, RESTORE of every key, its function libraries). They are
// given live for the load and taken back after it: the operator never needs them otherwise, and
// FLUSHALL is the one command that empties a node.
const restoreCommands = "+flushall +restore +function|flush +function|load"

// AllowRestore lets the operator's user replay a snapshot into the node at podIP, and take a
// snapshot (the load ends with one, to give the node a new replication backlog).
func (p *Pool) AllowRestore(ctx context.Context, podIP string) error {
	return p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		rules := strings.Fields(snapshotCommands + " " + restoreCommands)
		return c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(rules...).Build()).Error()
	})
}

// RevokeRestore takes back what AllowRestore gave for the replay.
func (p *Pool) RevokeRestore(ctx context.Context, podIP string) error {
	return p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		rules := strings.Fields(strings.ReplaceAll(restoreCommands, "+", "-"))
		return c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(rules...).Build()).Error()
	})
}
