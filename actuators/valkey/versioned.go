package valkey

import (
	"strconv"
	"strings"
)

// Directives that only later Valkey versions know. They are never written to valkey.conf: a
// server that does not know a directive refuses to start (8.0 answers "Bad directive or
// wrong number of arguments"), the ConfigMap is shared by every pod, and during a roll from
// 8.0 to 9.1 pods of both versions read it. Instead the operator sets them live (CONFIG SET,
// both are mutable) on each process by the version that process reports (INFO server's
// valkey_version), after it starts: a roll onto a newer version gets them without a second
// roll, and a process that restarts gets them again.
const (
	// ShutdownOnSigterm is what a node does on SIGTERM (Valkey 9.0 adds the failover flag).
	ShutdownOnSigterm = "shutdown-on-sigterm"
	// TLSAutoReloadInterval is how often, in seconds, a node checks its certificate, key and CA
	// files and loads them again when they changed (Valkey 9.1; 0, the default, never).
	TLSAutoReloadInterval = "tls-auto-reload-interval"
)

// TLSAutoReloadSeconds is the interval the operator sets: the kubelet refreshes a mounted
// Secret about once a minute, so a renewed certificate is served within about two minutes
// even while the operator is down. With the operator up, it still loads a renewal itself
// (reload-certificate) as soon as it sees the Secret's new serial, on every version.
const TLSAutoReloadSeconds = 60

// NodeFacts is what the versioned directives of one node depend on.
type NodeFacts struct {
	// Version is the version the node reports (valkey_version); "" when unknown.
	Version string
	// Cluster: the node runs in cluster mode (topology Cluster).
	Cluster bool
	// TLS: the node serves TLS (its pod was built with it).
	TLS bool
	// TLSRefused: the operator refuses the TLS Secret (it does not verify, or does not name
	// the cluster's pods).
	TLSRefused bool
}

// VersionedDirectives are the directives the operator sets live on a node that reports
// f.Version, except those the user sets in spec.config (userSets, any letter case): the
// user's value is in valkey.conf and wins.
//
// shutdown-on-sigterm failover (Valkey >= 9.0) is set on a replication group only. Valkey
// acts on the flag only in cluster mode: there a primary that gets SIGTERM waits (writes
// paused, up to shutdown-timeout) for a replica to acknowledge its whole offset, then sends
// it CLUSTER FAILOVER FORCE REPLICAID <id> on the replication stream, a manual failover that
// cluster-replica-no-failover does not stop. A primary still gets SIGTERM only when the
// preStop hold ran out before the operator handed its role over: the operator is down, or the
// machine would not hand over (no replica it trusts, another operation under way). That
// failover would promote a node the machine did not choose, behind its fence and epochs, so a
// Cluster topology keeps Valkey's default and the machine fails the shard over by its own
// rules. In a replication group Valkey 9.0 and 9.1 ignore the flag (SHUTDOWN FAILOVER is
// refused outside cluster mode; finishShutdown acts on it only with cluster_enabled, pinned by
// TestShutdownFailoverPromotesNothingInAReplicationGroup): a SIGTERM'd primary still waits for
// its replicas to catch up before it exits, and the preStop hand-over stays the one way a
// replica is promoted. A user who wants Valkey's own failover in a Cluster topology sets the
// directive in spec.config.
//
// tls-auto-reload-interval (Valkey >= 9.1) is set on a node that serves TLS, so that a renewal
// is served while the operator is down too. Valkey loads whatever the mounted files hold once
// they parse, without the operator's checks: while the operator refuses the Secret the
// interval is 0, so that the nodes it reaches keep serving what they loaded (a node that
// reloads before the operator has seen the refusal, or while it is down, loads it anyway: a
// user who wants every load checked sets tls-auto-reload-interval 0 in spec.config).
func VersionedDirectives(f NodeFacts, userSets func(directive string) bool) map[string]string {
	out := map[string]string{}
	add := func(k, v string) {
		if userSets == nil || !userSets(k) {
			out[k] = v
		}
	}
	if !f.Cluster && VersionAtLeast(f.Version, 9, 0) {
		add(ShutdownOnSigterm, "failover")
	}
	if f.TLS && VersionAtLeast(f.Version, 9, 1) {
		interval := TLSAutoReloadSeconds
		if f.TLSRefused {
			interval = 0
		}
		add(TLSAutoReloadInterval, strconv.Itoa(interval))
	}
	return out
}

// VersionAtLeast reports whether version ("9.1.2", as valkey_version says it) is at least
// major.minor; false for a version it cannot read, so that nothing a server may not know is
// set on it.
func VersionAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
