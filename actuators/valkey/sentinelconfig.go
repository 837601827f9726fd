package valkey

import (
	"fmt"
	"strings"
)

// How the sentinels of the Sentinel topology run: their users on the data nodes and on
// themselves, and the file each starts from.

// sentinelRules are what a sentinel sends to a data node (sentinel.c, Valkey 8.0 and 9):
// AUTH, PING, INFO, ROLE, CLIENT SETNAME and KILL, the hello channel's SUBSCRIBE and PUBLISH,
// SCRIPT KILL, and a failover's MULTI, REPLICAOF (SLAVEOF), CONFIG REWRITE, CLIENT KILL,
// EXEC. The rule of valkey.io/topics/acl, with REPLICAOF beside SLAVEOF and nothing else:
// no key, no channel but the hello one.
const sentinelRules = "resetkeys resetchannels &__sentinel__:hello -@all +auth +hello +ping +info +role +client|setname +client|kill +subscribe +publish +script|kill +multi +exec +slaveof +replicaof +config|rewrite"

// sentinelClientRules are what an application may do on a sentinel as the default user (the
// application password): find the primary and the replicas, and follow the switch-master
// events Sentinel-aware clients subscribe to. Nothing that changes a sentinel. The read-only
// rule of valkey.io/topics/sentinel, with the event channels and the primary-named spellings
// Valkey 8.0 added (GET-PRIMARY-ADDR-BY-NAME, PRIMARY, PRIMARIES).
const sentinelClientRules = "resetchannels &* -@all +auth +hello +ping +role +command +client|getname +client|id +client|setname +client|setinfo +subscribe +psubscribe +unsubscribe +punsubscribe +sentinel|get-master-addr-by-name +sentinel|get-primary-addr-by-name +sentinel|master +sentinel|primary +sentinel|masters +sentinel|primaries +sentinel|myid +sentinel|replicas +sentinel|slaves +sentinel|sentinels"

// SentinelConfigFile is where a sentinel's file is, on its own volume: Sentinel rewrites it on
// every change of its state (its id, the epochs it voted in, what it learnt), so it must
// outlive the container. SentinelTemplateFile is the file a sentinel starts from the first
// time, copied into SentinelConfigFile only when that does not exist.
const (
	SentinelTemplateDir  = "/etc/valkey-sentinel"
	SentinelTemplateFile = SentinelTemplateDir + "/sentinel.conf"
	SentinelConfigFile   = DataDir + "/sentinel.conf"
	// SentinelTemplateKey is the template's key in its Secret.
	SentinelTemplateKey = "sentinel.conf"
)

// SentinelConfig is the file a sentinel starts from: its port, its users and the credentials
// it gives the other sentinels. It names no group: the operator tells each sentinel what to
// monitor once the primary is known (machine.SentinelMonitor), with the data nodes'
// credentials (auth-user, auth-pass). p.Client "" is spec.auth.enabled false: applications
// then ask the sentinels with no password, as they reach the data nodes.
func SentinelConfig(p Passwords) string {
	var b strings.Builder
	fmt.Fprintf(&b, "port %d\n", SentinelPort)
	fmt.Fprintf(&b, "dir %s\n", DataDir)
	clientPass := "nopass"
	if p.Client != "" {
		clientPass = hashed(p.Client)
	}
	fmt.Fprintf(&b, "user %s on %s %s\n", UserClient, clientPass, sentinelClientRules)
	fmt.Fprintf(&b, "user %s on %s +@all &*\n", UserOperator, hashed(p.Operator))
	// The sentinels' hellos, votes and down-state questions to each other.
	fmt.Fprintf(&b, "user %s on %s +@all &*\n", UserSentinel, hashed(p.Sentinel))
	fmt.Fprintf(&b, "sentinel sentinel-user %s\n", UserSentinel)
	fmt.Fprintf(&b, "sentinel sentinel-pass %s\n", p.Sentinel)
	return b.String()
}

// SentinelArgs are valkey-sentinel's arguments in its pod: its file, every address of the
// pod, and the pod IP announced to the other sentinels in its hellos (else the address of
// whichever link it sent them on).
func SentinelArgs() []string {
	return []string{SentinelConfigFile, "--bind", "*", "-::*", "--sentinel", "announce-ip", "$(POD_IP)"}
}

// SentinelInitScript copies the template into the sentinel's volume the first time only: a
// sentinel whose file is rebuilt forgets its id and its votes. The copy is writable by its
// owner (Sentinel refuses to start on a file it cannot rewrite; the template is mounted
// read-only) and renamed into place whole, so that a copy cut short is never taken for the
// file.
const SentinelInitScript = `f=` + SentinelConfigFile + `; [ -s "$f" ] || { cat ` + SentinelTemplateFile + ` > "$f.new" && chmod 600 "$f.new" && mv "$f.new" "$f"; }`
