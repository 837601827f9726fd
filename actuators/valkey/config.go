package valkey

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Paths inside the pod where the rendered files are mounted.
const (
	ConfigDir   = "/etc/valkey"
	ConfigFile  = ConfigDir + "/valkey.conf"
	AuthDir     = "/etc/valkey/auth"
	AuthFile    = AuthDir + "/auth.conf"
	DataDir     = "/data"
	AuthFileKey = "auth.conf"
	// TLSDir holds the serving certificate (the kubernetes.io/tls Secret of spec.tls).
	TLSDir = "/etc/valkey/tls"
)

// TLSPort is the port a node serves TLS on.
const TLSPort = 6380

// TLSMode is how a node accepts connections: "" (plain only), "Both" (plain and TLS) or
// "TLSOnly" (port 0).
type TLSMode string

const (
	TLSNone TLSMode = ""
	TLSBoth TLSMode = "Both"
	TLSOnly TLSMode = "TLSOnly"
)

// ConfigInput is what valkey.conf depends on.
type ConfigInput struct {
	// Profile holds the profile's directives (persistence and eviction).
	Profile map[string]string
	// MaxMemory is the maxmemory argument; empty leaves it unset (no memory limit).
	MaxMemory string
	// Extra holds the user's directives (spec.config), already checked not to touch what the
	// operator owns.
	Extra map[string]string
	// Cluster renders Valkey cluster mode (topology Cluster).
	Cluster bool
	// TLS is how the node accepts connections, and TLSClientAuth whether clients must
	// present a certificate.
	TLS           TLSMode
	TLSClientAuth bool
	// Sentinel renders a data node of the Sentinel topology: it starts at replica-priority
	// 0, so that no sentinel promotes it before the operator has looked at it and opened it
	// as a sync source (replicapriority.go).
	Sentinel bool
}

// NodesFile is where a node of a Cluster topology keeps its cluster state (its id, epoch,
// peers and slots): on the data volume, so that a re-created pod is the same cluster node.
const NodesFile = DataDir + "/nodes.conf"

// clusterDirectives are what cluster mode needs of every node. Replica migration is off: the
// operator plans each shard's pods, and Valkey would otherwise move a replica to a primary
// left without one, or turn a primary emptied by a migration into someone's replica. Replicas
// never fail over by themselves: the operator's machine decides every failover of a shard
// with the same safety rules as in a replication group (the most complete replica wins, after
// the fence), see docs/cluster.md. A shard without a primary leaves only its own slots
// unserved: cluster-require-full-coverage is no unless spec.config says otherwise.
var clusterDirectives = map[string]string{
	"cluster-enabled":                 "yes",
	"cluster-config-file":             NodesFile,
	"cluster-allow-replica-migration": "no",
	"cluster-replica-no-failover":     "yes",
}

// clusterDefaults are cluster directives spec.config may change.
var clusterDefaults = map[string]string{
	"cluster-require-full-coverage": "no",
}

// RenderConfig renders valkey.conf. Per-pod values (bind address, announced IP) are passed
// as command-line arguments from the pod's IP instead, so one ConfigMap serves every pod.
func RenderConfig(in ConfigInput) string {
	var b strings.Builder
	b.WriteString("# Rendered by valkey-operator; edit spec.config of the ValkeyCluster instead.\n")
	if in.TLS == TLSOnly {
		b.WriteString("port 0\n")
	} else {
		fmt.Fprintf(&b, "port %d\n", Port)
	}
	if in.TLS != TLSNone {
		// Replicas use TLS to a primary that serves it; the operator sets tls-replication
		// live when it points a replica (a primary not rolled to TLS yet serves plain only).
		fmt.Fprintf(&b, "tls-port %d\ntls-cert-file %s/tls.crt\ntls-key-file %s/tls.key\ntls-ca-cert-file %s/ca.crt\n", TLSPort, TLSDir, TLSDir, TLSDir)
		// In cluster mode every node's bus is TLS (nodes with and without tls-cluster cannot
		// gossip: the spec fixes TLS at creation), peers are announced and met on their TLS
		// port, and replicas follow it, so replication and MIGRATE are TLS throughout.
		fmt.Fprintf(&b, "tls-auth-clients %s\ntls-replication %s\n", yesNo(in.TLSClientAuth), yesNo(in.TLS == TLSOnly || in.Cluster))
		if in.Cluster {
			b.WriteString("tls-cluster yes\n")
		}
	}
	fmt.Fprintf(&b, "dir %s\n", DataDir)
	// Access control is by ACL users (see auth.conf): protected mode would only refuse
	// connections that the users already govern.
	b.WriteString("protected-mode no\n")
	// Full syncs stream straight to the replica instead of through a file on the primary.
	b.WriteString("repl-diskless-sync yes\nrepl-diskless-sync-delay 0\n")
	// repl-diskless-load stays at Valkey's default, disabled (spec.config may not set it): a
	// replica, or a node loading a backup, keeps its data until the sync has arrived whole, so
	// a load cut short changes nothing and a refused restore can give the cluster back. Not
	// written here: it would change every running cluster's configuration for no effect.
	// A primary pings its replicas every second, so that a replica that has not heard from it
	// for 2 s is evidence that it is gone (the failover's confirmation), even when it takes
	// no writes.
	b.WriteString("repl-ping-replica-period 1\n")
	// Every RESTORE payload and every RDB file a node loads is checked deeply (each encoded
	// value's internal structure), not only by its checksum: a crafted payload, which anyone
	// with RESTORE (the application user) or write access to the backup store could supply,
	// is refused instead of being trusted by the server. It costs about 10-15% on loading an
	// RDB of small keys. spec.config may set it to clients or no.
	if !hasKey(in.Extra, "sanitize-dump-payload") {
		b.WriteString("sanitize-dump-payload yes\n")
	}
	if in.Cluster {
		// Cluster mode refuses replicaof: a node starts as a primary without slots (it serves
		// nothing) or, from its nodes.conf, as what it was, with both users off (auth.conf).
		writeSorted(&b, clusterDirectives)
		defaults := map[string]string{}
		for k, v := range clusterDefaults {
			if !hasKey(in.Extra, k) {
				defaults[k] = v
			}
		}
		writeSorted(&b, defaults)
	} else {
		b.WriteString(StartAsReplicaOfNothing)
	}
	writeSorted(&b, in.Profile)
	if in.MaxMemory != "" {
		fmt.Fprintf(&b, "maxmemory %s\n", in.MaxMemory)
	}
	extra := map[string]string{}
	for k, v := range in.Extra {
		if !strings.EqualFold(k, "maxmemory") { // rendered above, from spec.config when set
			extra[k] = v
		}
	}
	writeSorted(&b, extra)
	if in.Sentinel {
		b.WriteString("replica-priority 0\n")
	}
	// Last, so that nothing above can override the users and replication credentials.
	fmt.Fprintf(&b, "include %s\n", AuthFile)
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// hasKey reports whether m sets directive k, in any letter case.
func hasKey(m map[string]string, k string) bool {
	for key := range m {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

func writeSorted(b *strings.Builder, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(b, "%s %s\n", k, m[k])
	}
}

// Placeholder is the address every node starts replicating from: nothing listens there, so
// the link never comes up. Starting as a replica (of nothing) instead of as a primary makes
// Valkey keep the replication id and offset saved with its data across a restart, so a node
// restarted from its volume still names the history its data belongs to; the survey reports
// it as following nobody.
const (
	PlaceholderHost = "127.255.255.254"
	PlaceholderPort = 1
)

// StartAsReplicaOfNothing is the valkey.conf line that makes a node start that way.
var StartAsReplicaOfNothing = fmt.Sprintf("replicaof %s %d\n", PlaceholderHost, PlaceholderPort)

// ClusterStartScript starts valkey-server in cluster mode ("$@" are its arguments) after
// removing the shard ids from nodes.conf. Valkey 8.0 refuses to start ("Unrecoverable error:
// corrupted cluster config file") when the file it saved names a replica in another shard than
// its primary, which happens when a node is killed while shard ids are still settling after a
// failover (valkey-io/valkey#774, #2171; seen here on 8.0.1 after a host stop). Shard ids are
// learnt again from the primaries by gossip, which is what later Valkey versions do when they
// load such a file. Nothing else in the file is touched.
const ClusterStartScript = `f=` + NodesFile + `; if [ -s "$f" ]; then sed -i 's/,shard-id=[0-9a-f]*//' "$f"; fi; exec valkey-server "$@"`

// ServerCommand is the container command: valkey-server itself for a replication group, the
// ClusterStartScript in cluster mode.
func ServerCommand(cluster bool) []string {
	if cluster {
		return []string{"sh", "-c", ClusterStartScript, "valkey-server"}
	}
	return []string{"valkey-server"}
}

// ServerArgs are the command-line arguments of valkey-server in the pod: the config file and
// the per-pod addresses. The server listens on every address of its pod (IPv6 only where
// the pod has it: the "-" makes it optional), as users expect of a pod: kubectl port-forward
// (which connects to the pod's localhost) and an exec'd valkey-cli without -h reach it. The
// announced IP is the pod IP, from the POD_IP environment variable ($(POD_IP) is expanded
// by Kubernetes): it is what FAILOVER TO and the primary's replica list know a replica by,
// and in cluster mode what the node announces on the cluster bus (without it, a node may
// announce whichever address it has, 127.0.0.1 included).
func ServerArgs(cluster bool) []string {
	args := []string{ConfigFile, "--bind", "*", "-::*", "--replica-announce-ip", "$(POD_IP)"}
	if cluster {
		args = append(args, "--cluster-announce-ip", "$(POD_IP)")
	}
	return args
}
