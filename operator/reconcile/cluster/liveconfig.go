package cluster

import (
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// liveApplied remembers, per cluster and pod, which process was given which set of live
// directives, so that each process is set once per change. After an operator restart every
// process is set once more, which changes nothing.
type liveApplied struct{ nodeMemory[liveAttempt] }

// liveAttempt is one process given one set: key is runID + "/" + valkey.LiveHash; refused is
// Valkey's error when it refused the set. A refused set is not applied: it is reported (status,
// Event) and tried again when the spec changes the set or the process restarts, not before.
type liveAttempt struct {
	key     string
	refused string
}

// refusals says, for status, which processes refused the current set of live directives.
func (l *liveApplied) refusals(vc *v1beta1.ValkeyCluster, w *world) string {
	var out []string
	for _, n := range w.obs.Nodes {
		if a := l.get(vc.UID, n.Name); a.refused != "" && n.Reachable && a.key == n.Valkey.RunID+"/"+valkey.LiveHash(liveFor(vc, w, n)) {
			out = append(out, n.Name+" refused CONFIG SET: "+a.refused)
		}
	}
	return strings.Join(out, "; ")
}

// applyLive sets the live directives (spec.config entries Valkey applies at once, see
// valkey.IsLive, and the directives of the node's reported version, see liveFor) on every
// process that answers and has not got this set yet: a change to them rolls nothing. A
// process that restarted gets them again, since its mounted ConfigMap may still be the old one
// (kubelet refreshes it lazily). A refused value is reported once per process and change
// (Warning Event), and the cluster keeps serving with the old one.
func (r *Reconciler) applyLive(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world) {
	var set, failed []string
	described := map[string]bool{}
	var sets []string
	for _, n := range w.obs.Nodes {
		ip := answeringIP(w, n)
		if ip == "" {
			continue
		}
		live := liveFor(vc, w, n)
		key := n.Valkey.RunID + "/" + valkey.LiveHash(live)
		if r.live.get(vc.UID, n.Name).key == key {
			continue
		}
		attempt := liveAttempt{key: key}
		if err := w.pool.ApplyLive(ctx, ip, n.Valkey.RunID, live); err != nil {
			attempt.refused = err.Error()
			failed = append(failed, n.Name+": "+err.Error())
		} else {
			set = append(set, n.Name)
			if d := describeLive(live); !described[d] {
				described[d] = true
				sets = append(sets, d)
			}
		}
		r.live.set(vc.UID, n.Name, attempt)
	}
	if len(set) > 0 {
		logFrom(ctx).Info("live configuration set", "pods", set, "directives", strings.Join(sets, "; "))
	}
	if len(failed) > 0 {
		r.event(vc, corev1.EventTypeWarning, "ConfigRefused", "CONFIG SET refused, the old values stay: %s", strings.Join(failed, "; "))
	}
}

// liveFor is the live set of node n: spec.config's live directives, and the directives the
// version n reports brings (valkey.VersionedDirectives: by its topology, by whether its pod
// serves TLS and whether the operator refuses the TLS Secret, and not those spec.config sets,
// whose value is in valkey.conf). They are set live rather than rendered because the ConfigMap
// is one for every pod, and a server that does not know a directive refuses to start: during a
// roll from 8.0 to 9.1 each process gets what its own version knows, as soon as it answers,
// without a second roll.
func liveFor(vc *v1beta1.ValkeyCluster, w *world, n machine.Node) map[string]string {
	tls := false
	if pod := w.pods[n.Name]; pod != nil {
		tls = pod.Annotations[kube.AnnotationTLS] != ""
	}
	userSets := func(k string) bool {
		_, ok := v1beta1.LookupConfig(vc.Spec.Config, k)
		return ok
	}
	versioned := valkey.VersionedDirectives(valkey.NodeFacts{Version: n.Valkey.Version, Cluster: w.desired.Names.Sharded, TLS: tls, TLSRefused: w.tlsErr != nil}, userSets)
	if len(versioned) == 0 {
		return w.desired.Live
	}
	live := maps.Clone(w.desired.Live)
	if live == nil {
		live = map[string]string{}
	}
	maps.Copy(live, versioned)
	return live
}

// answeringIP is the pod IP of a node that answers and is not loading ("": none), the nodes
// live settings and users are given to.
func answeringIP(w *world, n machine.Node) string {
	pod := w.pods[n.Name]
	if !n.Reachable || n.Valkey.Loading || pod == nil {
		return ""
	}
	return pod.Status.PodIP
}

func describeLive(live map[string]string) string {
	pairs := make([]string, 0, len(live))
	for _, k := range slices.Sorted(maps.Keys(live)) {
		pairs = append(pairs, k+"="+live[k])
	}
	return strings.Join(pairs, " ")
}
