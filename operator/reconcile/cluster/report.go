package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/backups"
	"github.com/valkey-fsm/valkey-operator/operator/reconcile/shared"
)

// roleOf is the role label a pod should carry now. Only the recorded primary, open for
// writes, is "primary" (the client Service sends writes nowhere else); a replica that is
// linked to its primary is "replica" (the read Service); anything else carries no role and
// receives no Service traffic.
func roleOf(p machine.Persisted, n machine.Node) string {
	if !n.Reachable {
		return ""
	}
	switch n.Valkey.Role {
	case machine.RolePrimary:
		if len(p.Shards) > 0 && p.Shards[0].Primary == n.Name && p.Shards[0].RunID == n.Valkey.RunID && !n.Valkey.WritesFenced {
			return kube.RolePrimary
		}
	case machine.RoleReplica:
		if n.Valkey.LinkUp {
			return kube.RoleReplica
		}
	}
	return ""
}

// syncRoles keeps the pods' role labels equal to what their processes report.
func (r *Reconciler) syncRoles(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, p machine.Persisted) error {
	for _, n := range w.obs.Nodes {
		pod := w.pods[n.Name]
		if pod == nil || pod.DeletionTimestamp != nil {
			continue
		}
		changed, err := kube.SetRole(ctx, r.Client, pod, roleOf(p, n))
		if err != nil {
			return err
		}
		if changed {
			r.Metrics.APIWrites.WithLabelValues(vc.Namespace, vc.Name, "role-label").Inc()
		}
	}
	return nil
}

// report writes the status fields that describe the world (nodes, primary, ready counts)
// when they differ from what status shows: no write when nothing changed.
func (r *Reconciler) report(ctx context.Context, vc *v1beta1.ValkeyCluster, w *world, d machine.Decision) error {
	p := d.Next
	before := vc.DeepCopy()
	primaryOffset := map[int]int64{}
	for _, n := range w.obs.Nodes {
		if n.Reachable && n.Valkey.Role == machine.RolePrimary && n.Shard < len(p.Shards) && p.Shards[n.Shard].Primary == n.Name {
			primaryOffset[n.Shard] = n.Valkey.Offset
		}
	}
	nodes := make([]v1beta1.NodeStatus, 0, len(w.obs.Nodes))
	ready, exist := int32(0), int32(0)
	for _, n := range w.obs.Nodes {
		if n.Pod.Exists {
			exist++
		}
		if !n.Pod.Exists && !n.Reachable {
			continue
		}
		ns := v1beta1.NodeStatus{Pod: n.Name, IP: n.Pod.IP, Role: v1beta1.NodeRoleUnknown, Shard: int32(n.Shard), Ready: n.Pod.Ready && n.Reachable}
		if n.Reachable {
			ns.ReplicationOffset = n.Valkey.Offset
			switch n.Valkey.Role {
			case machine.RolePrimary:
				ns.Role = v1beta1.NodeRolePrimary
			case machine.RoleReplica:
				ns.Role = v1beta1.NodeRoleReplica
				if primaryOffset[n.Shard] > n.Valkey.Offset {
					ns.Lag = primaryOffset[n.Shard] - n.Valkey.Offset
				}
			}
		}
		if ns.Ready {
			ready++
		}
		nodes = append(nodes, ns)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Pod < nodes[j].Pod })
	want := *w.desired.StatefulSet.Spec.Replicas * int32(w.obs.Spec.Shards)
	vc.Status.Nodes = nodes
	vc.Status.Sentinels = sentinelStatuses(w.obs, w.surveyErrs)
	// Pods that exist, not the spec's count: while the machine holds a scale-down back they
	// differ, and status must say what is there.
	vc.Status.Pods = exist
	vc.Status.ReadyPods = ready
	vc.Status.Replicas = replicasNow(w.obs.Nodes, w.obs.Spec.Shards)
	vc.Status.Selector = labels.SelectorFromSet(kube.SelectorLabels(vc)).String()
	vc.Status.ValkeyVersion = versionsSeen(w.obs.Nodes)
	vc.Status.Phase = string(p.Phase())
	vc.Status.ReadyNodes = fmt.Sprintf("%d/%d", ready, want)
	vc.Status.ObservedGeneration = vc.Generation
	vc.Status.Progress = progressOf(w, p)
	vc.Status.Restore = restoreStatus(vc, w, p)
	vc.Status.TLS = tlsStatus(w)
	waiting := d.Waiting.String()
	vc.Status.Waiting = waiting
	vc.Status.FailingActions = w.failing
	why := machine.NotStarting(w.obs.Nodes)
	if w.supportErr != nil && errors.Is(w.supportErr, kube.ErrNotOurs) {
		// An object in the way is the user's to move: say so where they look.
		why = strings.TrimPrefix(why+"; "+notOurs(w.supportErr), "; ")
	}
	if refused := credentialsRefused(w); refused != "" {
		why = strings.TrimPrefix(why+"; "+refused, "; ")
		if !strings.Contains(before.Status.Waiting, refused) {
			r.event(vc, corev1.EventTypeWarning, "AuthenticationFailed", "%s", refused)
		}
	}
	if bad := certificatesRefused(w); bad != "" {
		why = strings.TrimPrefix(why+"; "+bad, "; ")
		if !strings.Contains(before.Status.Waiting, bad) {
			r.event(vc, corev1.EventTypeWarning, "TLSVerificationFailed", "%s", bad)
		}
	}
	if w.existingSecretErr != nil {
		msg := w.existingSecretErr.Error() + "; the cluster keeps the application password it runs with"
		why = strings.TrimPrefix(why+"; "+msg, "; ")
		if !strings.Contains(before.Status.Waiting, msg) {
			r.event(vc, corev1.EventTypeWarning, "AuthFailed", "%s", msg)
		}
	}
	if w.tlsErr != nil {
		msg := "TLS: " + w.tlsErr.Error()
		why = strings.TrimPrefix(why+"; "+msg, "; ")
		if !strings.Contains(before.Status.Waiting, msg) {
			r.event(vc, corev1.EventTypeWarning, "TLSRefused", "%s", msg)
		}
	}
	if refused := backups.ScheduleRefused(vc); refused != "" {
		why = strings.TrimPrefix(why+"; "+refused, "; ")
	}
	if refused := r.live.refusals(vc, w); refused != "" {
		why = strings.TrimPrefix(why+"; "+refused, "; ")
	}
	if final := r.finalWaits.get(vc.UID); final != "" && !vc.DeletionTimestamp.IsZero() {
		// A deleted cluster waits for its final backup before anything else (finalbackup.go).
		why = strings.TrimSuffix(final+"; "+why, "; ")
	}
	if why != "" && !strings.Contains(waiting, why) {
		// Whatever the machine waits for, a pod that does not start is the first thing to fix.
		vc.Status.Waiting = strings.TrimSuffix(why+"; "+waiting, "; ")
	}
	// A pod that does not start says why (Valkey's own error, from its termination message),
	// once per error: Degraded carries it while it lasts.
	var wasDegraded string
	if c := meta.FindStatusCondition(before.Status.Conditions, machine.ConditionDegraded); c != nil {
		wasDegraded = c.Message
	}
	for _, n := range w.obs.Nodes {
		if why := n.NotStarting(); why != "" && !strings.Contains(wasDegraded, why) {
			logFrom(ctx).Info("pod does not start", "pod", n.Name, "why", why)
			r.event(vc, corev1.EventTypeWarning, "PodNotStarting", "%s does not start: %s", n.Name, why)
		}
	}
	// Ready, Progressing and Degraded say what this observation shows, whatever the state.
	vc.Status.Conditions = apiConditions(machine.MergeObserved(conditionsOf(vc.Status.Conditions), machine.Observed(p, w.obs, d), w.obs.Time), vc.Generation)
	if p.State == machine.Bootstrapping && waiting != "" && waiting != before.Status.Waiting {
		// A bootstrap that waits serves nothing: say why where users look (kubectl describe),
		// once per reason. A cluster applied on kept volumes may wait here for a decision.
		r.event(vc, corev1.EventTypeNormal, "BootstrapWaiting", "%s", waiting)
	}
	if why := d.Waiting.FailoverHeldBack(); why != "" && !strings.HasSuffix(before.Status.Waiting, why) {
		// The primary is lost and the machine will not fail over yet: say why, and what the
		// user can do, where users look; once per reason (the fault's words count probes, the
		// reason ends the text).
		r.event(vc, corev1.EventTypeWarning, "FailoverWaiting", "%s", waiting)
	}
	if d.Waiting.Kind == machine.WaitSwitchover && waiting != before.Status.Waiting {
		// A switchover the machine will not take now: the request stays (it is taken once the
		// reason is gone, or withdrawn by removing the annotation), and the user sees why.
		r.event(vc, corev1.EventTypeWarning, "SwitchoverWaiting", "%s", waiting)
	}
	if open := openSlotsLine(waiting); open != "" && open != openSlotsLine(before.Status.Waiting) {
		// Slots served half-way towards a node the operator does not run: only a person can
		// tell where their keys are. Once per set of slots.
		r.event(vc, corev1.EventTypeWarning, "SlotsLeftOpen", "%s", open)
	}
	r.reportMetrics(vc, w, d)
	vc.Status.Primary = ""
	if len(p.Shards) > 0 && w.obs.Spec.Mode != machine.ModeCluster {
		vc.Status.Primary = p.Shards[0].Primary
	}
	reportShards(vc, w, p)
	if equality.Semantic.DeepEqual(withoutOffsets(before.Status), withoutOffsets(vc.Status)) {
		// Offsets move all the time (replication pings advance them even on an idle
		// cluster): they are written with the next real change, not on their own, so that an
		// idle cluster costs no API writes. Lag is kept as "behind or not".
		vc.Status = before.Status
		return nil
	}
	return r.patchStatus(ctx, vc, before, "status-report")
}

// reportMetrics sets the cluster's gauges from this turn's report.
func (r *Reconciler) reportMetrics(vc *v1beta1.ValkeyCluster, w *world, d machine.Decision) {
	m := r.Metrics
	m.Ready.WithLabelValues(vc.Namespace, vc.Name).Set(shared.BoolValue(v1beta1.IsReady(vc)))
	m.Progressing.WithLabelValues(vc.Namespace, vc.Name).Set(shared.BoolValue(meta.IsStatusConditionTrue(vc.Status.Conditions, machine.ConditionProgressing)))
	spec := vc.Spec.DeepCopy()
	v1beta1.SetDefaults(spec)
	m.Info.DeletePartialMatch(prometheus.Labels{"namespace": vc.Namespace, "cluster": vc.Name})
	m.Info.WithLabelValues(vc.Namespace, vc.Name, string(spec.Topology), string(spec.Profile)).Set(1)
	m.FailoverWaiting.WithLabelValues(vc.Namespace, vc.Name).Set(shared.BoolValue(d.Waiting.FailoverHeldBack() != ""))
	if w.obs.Spec.Mode == machine.ModeSentinel {
		answering, naming := sentinelCounts(w.obs, d.Next)
		m.Sentinels.WithLabelValues(vc.Namespace, vc.Name).Set(float64(w.obs.Spec.Sentinels))
		m.SentinelsAnswering.WithLabelValues(vc.Namespace, vc.Name).Set(float64(answering))
		m.SentinelsNamingPrimary.WithLabelValues(vc.Namespace, vc.Name).Set(float64(naming))
	}
	m.CertificateExpiry.DeletePartialMatch(prometheus.Labels{"namespace": vc.Namespace, "cluster": vc.Name})
	for _, c := range w.nodeCerts {
		if c.NotAfter != nil {
			m.CertificateExpiry.WithLabelValues(vc.Namespace, vc.Name, c.Pod).Set(float64(c.NotAfter.Unix()))
		}
	}
}

// reportShards writes, for a Cluster topology, each recorded shard's primary and slots, and how
// many of the hash slots the recorded primaries serve (as they report it themselves).
func reportShards(vc *v1beta1.ValkeyCluster, w *world, p machine.Persisted) {
	vc.Status.Shards, vc.Status.ShardCount, vc.Status.Slots = nil, 0, ""
	if w.obs.Spec.Mode != machine.ModeCluster {
		return
	}
	vc.Status.ShardCount = int32(len(p.Shards))
	served := 0
	for sh, rec := range p.Shards {
		st := v1beta1.ShardStatus{Index: int32(sh), Primary: rec.Primary}
		for _, n := range w.obs.Nodes {
			if n.Name == rec.Primary && n.Reachable && n.Valkey.Role == machine.RolePrimary {
				for _, r := range n.Valkey.Slots {
					served += r.End - r.Start + 1
				}
				st.Slots = shared.RangesText(n.Valkey.Slots)
			}
		}
		vc.Status.Shards = append(vc.Status.Shards, st)
	}
	vc.Status.Slots = fmt.Sprintf("%d/%d", served, machine.NumSlots)
	if served < machine.NumSlots {
		vc.Status.Slots += fmt.Sprintf(", %d unserved", machine.NumSlots-served)
	}
}

// withoutOffsets masks what changes without anything happening: offsets, and lag except
// whether it is zero.
func withoutOffsets(st v1beta1.ValkeyClusterStatus) v1beta1.ValkeyClusterStatus {
	st = *st.DeepCopy()
	for i := range st.Nodes {
		st.Nodes[i].ReplicationOffset = 0
		if st.Nodes[i].Lag > 0 {
			st.Nodes[i].Lag = 1
		}
	}
	return st
}

// progressOf says in words how far the operation in progress is.
func progressOf(w *world, p machine.Persisted) string {
	switch p.State {
	case machine.Rolling:
		at, total := 0, 0
		for _, n := range w.obs.Nodes {
			if n.Pod.Exists {
				total++
				if n.Pod.Revision == w.obs.Spec.Revision && n.Pod.Ready {
					at++
				}
			}
		}
		return fmt.Sprintf("rolling: %d of %d pods restarted at revision %s", at, total, w.obs.Spec.Revision)
	case machine.FailingOver:
		op := p.Op
		switch {
		case op.Election.Planned && op.HandOver.To != "":
			return fmt.Sprintf("switchover from %s to %s", op.Election.Lost, op.HandOver.To)
		case op.Election.Candidate != "":
			return fmt.Sprintf("failover from %s: %s elected", op.Election.Lost, op.Election.Candidate)
		default:
			return fmt.Sprintf("failover from %s: electing the most complete replica", op.Election.Lost)
		}
	case machine.Resharding:
		return reshardProgress(w, p)
	case machine.Bootstrapping:
		ready := 0
		for _, n := range w.obs.Nodes {
			if n.Pod.Ready {
				ready++
			}
		}
		return fmt.Sprintf("bootstrapping: %d of %d pods ready", ready, len(w.obs.Nodes))
	}
	return ""
}

// reshardProgress says how many slots the machine's plan for the target shard count still
// moves (as the shards' primaries report their own slots), and what the last migration step did.
func reshardProgress(w *world, p machine.Persisted) string {
	target := p.Op.Reshard.Shards
	if target < 1 {
		return "resharding"
	}
	left := machine.SlotsToMove(p, w.obs, target)
	msg := fmt.Sprintf("resharding to %d shards: %d slots left to move", target, left)
	if m := w.migration; m != nil {
		switch {
		case m.result.ASM && m.result.Running:
			msg += fmt.Sprintf("; atomic slot migration running (%d slots of the range left on the source)", m.result.SlotsLeft)
		case m.result.KeysMoved > 0 && m.took > 0:
			msg += fmt.Sprintf("; last step moved %d slots, %d keys (%.0f keys/s)", m.result.SlotsMoved, m.result.KeysMoved, float64(m.result.KeysMoved)/m.took.Seconds())
		}
	}
	return msg
}

// credentialsRefused names the nodes that refuse the operator's credentials (WRONGPASS,
// NOAUTH, NOPERM): they answer, so "not answering" would send the user looking at the
// network; the auth Secret is what changed. "" when none does.
func credentialsRefused(w *world) string {
	var pods []string
	for _, n := range w.obs.Nodes {
		if e := w.surveyErrs[n.Name]; !n.Reachable && isAuthError(e) {
			pods = append(pods, n.Name)
		}
	}
	if len(pods) == 0 {
		return ""
	}
	return fmt.Sprintf("%s refuse(s) the operator's credentials (WRONGPASS/NOAUTH): the passwords in the auth Secret are not the ones the nodes started with; put the old ones back (a new password reaches a node only when it restarts)", strings.Join(pods, ", "))
}

// certificatesRefused names the nodes whose certificate the operator does not accept (it does
// not verify against the CA, or does not name the pod): they answer, over a TLS the operator
// will not trust. "" when none.
func certificatesRefused(w *world) string {
	var out []string
	for _, n := range w.obs.Nodes {
		if e := w.surveyErrs[n.Name]; !n.Reachable && (strings.Contains(e, "x509:") || strings.Contains(e, "tls:")) {
			out = append(out, fmt.Sprintf("%s: %s", n.Name, e))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "TLS: the certificate of " + strings.Join(out, "; ") + " is not accepted (it must verify against the Secret's ca.crt and name the pod: <pod>.<cluster>-nodes.<namespace>.svc)"
}

func isAuthError(e string) bool {
	return strings.Contains(e, "WRONGPASS") || strings.Contains(e, "NOAUTH") || strings.Contains(e, "NOPERM")
}

// notOurs keeps, of the support objects' errors, those about objects in the way.
func notOurs(err error) string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Contains(line, kube.ErrNotOurs.Error()) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "; ")
}

// openSlotsLine is the part of a wait line about slots open towards unknown nodes, or "".
func openSlotsLine(waiting string) string {
	if i := strings.Index(waiting, machine.OpenSlotsUnknown); i >= 0 {
		return waiting[i:]
	}
	return ""
}
