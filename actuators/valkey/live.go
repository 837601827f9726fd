package valkey

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// liveDirectives are the directives a change of which is applied to the running processes with
// CONFIG SET instead of a rolling restart: Valkey applies each at once, and none changes what a
// node holds, how it replicates or how it starts. A change to any other directive changes the
// pod revision and rolls the cluster. Every entry is exercised by TestLiveDirectivesAreSettable
// on a real valkey-server, so one that Valkey refuses to set fails a test, not a rollout.
var liveDirectives = map[string]bool{
	"maxmemory": true, "maxmemory-samples": true, "maxmemory-eviction-tenacity": true,
	"min-replicas-to-write": true, "min-replicas-max-lag": true,
	"timeout": true, "tcp-keepalive": true, "maxclients": true,
	"hz": true, "dynamic-hz": true,
	"slowlog-log-slower-than": true, "slowlog-max-len": true,
	"latency-monitor-threshold": true, "notify-keyspace-events": true,
	"lazyfree-lazy-eviction": true, "lazyfree-lazy-expire": true, "lazyfree-lazy-server-del": true,
	"lazyfree-lazy-user-del": true, "lazyfree-lazy-user-flush": true,
	"activedefrag": true, "active-defrag-ignore-bytes": true, "active-defrag-threshold-lower": true,
	"active-defrag-threshold-upper": true, "active-defrag-cycle-min": true, "active-defrag-cycle-max": true,
	"hash-max-listpack-entries": true, "hash-max-listpack-value": true,
	"list-max-listpack-size": true, "set-max-intset-entries": true, "set-max-listpack-entries": true,
	"zset-max-listpack-entries": true, "zset-max-listpack-value": true,
	"stream-node-max-bytes": true, "stream-node-max-entries": true,
	"repl-backlog-size": true, "repl-timeout": true, "busy-reply-threshold": true,
	"appendfsync": true,
}

// IsLive reports whether a directive is applied to running processes without a restart.
func IsLive(directive string) bool { return liveDirectives[strings.ToLower(directive)] }

// Split returns the directives of in that need a restart to take effect (what the pod revision
// hashes) and the live ones with their values (applied with CONFIG SET).
func Split(in ConfigInput) (restart ConfigInput, live map[string]string) {
	restart = ConfigInput{Profile: in.Profile, Extra: map[string]string{}, Cluster: in.Cluster, TLS: in.TLS, TLSClientAuth: in.TLSClientAuth}
	live = map[string]string{}
	if in.MaxMemory != "" {
		live["maxmemory"] = in.MaxMemory
	}
	for k, v := range in.Extra {
		if IsLive(k) {
			live[strings.ToLower(k)] = v
		} else {
			restart.Extra[k] = v
		}
	}
	return restart, live
}

// LiveHash identifies a set of live settings, so that each process gets each set once.
func LiveHash(live map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(live)) {
		fmt.Fprintf(h, "%s=%s\n", k, live[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ApplyLive sets the live directives on the process runID at podIP, in one CONFIG SET (Valkey
// applies all or none).
func (p *Pool) ApplyLive(ctx context.Context, podIP, runID string, live map[string]string) error {
	if len(live) == 0 {
		return nil
	}
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		args := make([]string, 0, 2*len(live))
		for _, k := range slices.Sorted(maps.Keys(live)) {
			args = append(args, k, live[k])
		}
		return c.Do(ctx, c.B().Arbitrary("CONFIG", "SET").Args(args...).Build()).Error()
	})
}
