package v1beta1

import "strings"

// OperatorOwnedDirectives are the valkey.conf directives the operator sets itself and relies
// on, so spec.config may not set them (in any letter case: Valkey compares directive names
// case-insensitively). Aliases are listed too (slaveof for replicaof, primaryauth for
// masterauth, min-slaves-* for min-replicas-*), or they would be a way around the list.
//
//   - networking and files: bind, port, bind-source-addr, unixsocket, protected-mode, dir,
//     dbfilename, appendfilename, appenddirname, pidfile, logfile, daemonize, include;
//   - persistence and eviction, which follow spec.profile: appendonly, save,
//     maxmemory-policy;
//   - replication, which the state machine drives: replicaof, slaveof, min-replicas-to-write,
//     min-replicas-max-lag (and their min-slaves-* aliases; both will get spec fields),
//     repl-ping-replica-period (and repl-ping-slave-period: the replicas' view of the primary,
//     which confirms a failover, relies on a ping every second), repl-diskless-load (always
//     disabled: a replica, or a node loading a backup, keeps its data until a sync has
//     arrived whole, which a restore given back relies on);
//   - authentication, which follows spec.auth: requirepass, masterauth, masteruser,
//     primaryauth, primaryuser, aclfile, user (an ACL user defined in the file could
//     re-open the default user), rename-command (the operator needs its commands);
//   - cluster mode, which the topology decides: cluster-enabled, cluster-config-file,
//     cluster-port, cluster-announce-ip (each pod's IP), cluster-allow-replica-migration (no:
//     shards are the operator's plan) and cluster-replica-no-failover (and its
//     cluster-slave-no-failover alias: failover is the operator's, see docs/cluster.md);
//   - TLS, which follows spec.tls: tls-port, tls-cert-file, tls-key-file, tls-ca-cert-file,
//     tls-ca-cert-dir, tls-replication (set per link by the operator), tls-cluster,
//     tls-auth-clients.
//
// The CEL rule on ValkeyClusterSpec.Config carries the same list; a test checks that they
// agree, and the celtest suite checks that the API server refuses every entry. The slice is
// in lower case and in the rule's order; do not modify it at run time.
var OperatorOwnedDirectives = []string{
	"bind", "port", "dir", "dbfilename", "appendonly", "appendfilename", "appenddirname",
	"save", "maxmemory-policy", "replicaof", "slaveof", "masterauth", "masteruser",
	"primaryauth", "primaryuser", "requirepass", "aclfile", "user", "cluster-enabled",
	"cluster-config-file", "daemonize", "pidfile", "logfile", "unixsocket", "protected-mode",
	"rename-command", "include", "bind-source-addr", "min-replicas-to-write",
	"min-replicas-max-lag", "min-slaves-to-write", "min-slaves-max-lag",
	"repl-ping-replica-period", "repl-ping-slave-period", "cluster-port", "cluster-announce-ip",
	"cluster-allow-replica-migration", "cluster-replica-no-failover", "cluster-slave-no-failover",
	"tls-port", "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-ca-cert-dir",
	"tls-replication", "tls-cluster", "tls-auth-clients", "repl-diskless-load",
}

// IsOperatorOwned reports whether name is one of OperatorOwnedDirectives, ignoring case as
// Valkey does.
func IsOperatorOwned(name string) bool {
	for _, d := range OperatorOwnedDirectives {
		if strings.EqualFold(name, d) {
			return true
		}
	}
	return false
}

// LookupConfig returns the value config gives to the directive name, comparing names
// case-insensitively as Valkey does. With several spellings of one name (MaxMemory and
// maxmemory), Valkey would apply whichever comes last in valkey.conf; LookupConfig prefers
// the exact lower-case spelling and otherwise the spelling that sorts first, so its answer
// never depends on map order.
func LookupConfig(config map[string]ConfigValue, name string) (ConfigValue, bool) {
	want := strings.ToLower(name)
	if v, ok := config[want]; ok {
		return v, true
	}
	var best string
	found := false
	for k := range config {
		if strings.EqualFold(k, want) && (!found || k < best) {
			best, found = k, true
		}
	}
	if !found {
		return "", false
	}
	return config[best], true
}
