package cluster

import (
	"context"
	"crypto/x509"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// world is one observation with the objects it was built from, for the act and report steps.
type world struct {
	obs  machine.Observation
	pods map[string]*corev1.Pod // by name
	// claims are the pods' data claims, by pod name.
	claims map[string]*corev1.PersistentVolumeClaim
	// sets are the owned StatefulSets by shard (a replication group has shard 0 only).
	sets    map[int]*appsv1.StatefulSet
	desired kube.Desired
	pool    *valkey.Pool
	// passwords are the cluster's users' passwords (ReplicaOf restores the replication one).
	passwords valkey.Passwords
	// surveyErrs says why a node did not answer (for status and logs).
	surveyErrs map[string]string
	// stats are what each answering node's survey read for the metrics, by pod name.
	stats map[string]valkey.Stats
	// tlsErr is why the nodes that serve TLS cannot be reached with verification (nil: they
	// can, or none serves TLS).
	tlsErr error
	// existingSecretErr is why spec.auth.passwordSecretRef is unusable while the cluster keeps
	// the application password it runs with (nil: usable, or not used).
	existingSecretErr error
	// readsSecrets: the turn reads Secrets the operator does not own (the user's application
	// password, spec.tls's, ValkeyACL passwords), whose changes no watch reports: such a
	// cluster is never left to the idle resync (prober.go).
	readsSecrets bool
	// tlsLeaf is the certificate in spec.tls's Secret, nodeCerts what each TLS node served.
	tlsLeaf   *x509.Certificate
	nodeCerts []v1beta1.NodeCertificate
	// certificate is the operator's cert-manager Certificate (nil without spec.tls.issuerRef).
	certificate *v1beta1.CertificateRequestStatus
	// interval is the cluster's probe interval: each survey gets at most that long, and the
	// next probe is due that long after this one started.
	interval time.Duration
	// failing are the actions of this turn's decision that failed or back off, for
	// status.failingActions.
	failing []v1beta1.FailingAction
	// supportErr is why support objects could not be written this turn (nil: they were).
	supportErr error
	// migration is this turn's slot migration step, if any.
	migration   *migrationStep
	migrationMu sync.Mutex
	// histories are the restored data's replication IDs with those its nodes hold now
	// (markRestored; nil: no restore recorded); restoredHistories those of nodes that loaded
	// a snapshot this turn; restorePhase is Verifying or Refused while a restore is pending.
	histories         []string
	restoredHistories []string
	restoreMu         sync.Mutex
	restorePhase      string
	// restoreSpec and restorePath are where restoreFrom's snapshot is (nil: none resolved).
	restoreSpec *v1beta1.BackupStore
	restorePath string
	// owner is the owner reference of the cluster's objects.
	owner metav1.OwnerReference
	// rotation is the prepared password rotation's passwords (nil: none).
	rotation *valkey.RotationPasswords
}

// probeCounters remembers consecutive failed surveys per node. It lives in memory only: an
// operator restart resets the counts, which can only delay a failover, never cause one.
type probeCounters struct{ nodeMemory[int] }

// count records a survey of node and returns its consecutive failures.
func (p *probeCounters) count(cluster types.UID, node string, ok bool) int {
	return p.update(cluster, node, func(failed int, _ bool) (int, bool) {
		if ok {
			return 0, false
		}
		return failed + 1, true
	})
}

// observe (vc defaulted) builds the machine's observation: the spec summary, what the StatefulSet asks for,
// and one node per pod that should exist or does, with its Valkey survey.
func (r *Reconciler) observe(ctx context.Context, vc *v1beta1.ValkeyCluster, desired kube.Desired, pool *valkey.Pool) (*world, error) {
	w := &world{pods: map[string]*corev1.Pod{}, claims: map[string]*corev1.PersistentVolumeClaim{}, desired: desired, pool: pool, surveyErrs: map[string]string{}, stats: map[string]valkey.Stats{}}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		w.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	w.tlsLeaf, w.tlsErr = r.routeTLS(ctx, vc, desired.Names, w.pods, pool)
	var claims corev1.PersistentVolumeClaimList
	if err := r.Client.List(ctx, &claims, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
		return nil, err
	}
	for i := range claims.Items {
		if pod, ok := kube.PodOfClaim(claims.Items[i].Name); ok {
			w.claims[pod] = &claims.Items[i]
		}
	}
	var err error
	if w.sets, err = r.statefulSets(ctx, vc, desired.Names); err != nil {
		return nil, err
	}
	want := int(*desired.StatefulSet.Spec.Replicas)
	// The clock is read here, once, and truncated to what status keeps (microseconds), so
	// that the machine's stored times compare exactly with later observations.
	w.obs.Time = r.now().UTC().Truncate(time.Microsecond)
	w.obs.Clock = r.clock
	spec := &vc.Spec
	minSync := v1beta1.MinReplicasToWrite(spec)
	pool.SetWriteQuorum(int(minSync))
	// An isolated primary stops taking writes once its replicas lag more than maxLag (as
	// Valkey rounds and refreshes it); only then may a promoted replica be opened without
	// evidence the old one is dead or fenced. Without min-replicas-to-write nothing stops
	// it: 0 makes the machine wait for evidence.
	fence := time.Duration(0)
	if minSync > 0 {
		fence = valkey.IsolatedPrimaryStopsWritesWithin(time.Duration(spec.Durability.MaxLagSeconds) * time.Second)
	}
	mode, shards := machine.ModeReplication, 1
	if desired.Names.Sharded {
		mode, shards = machine.ModeCluster, int(spec.Shards)
	}
	if desired.Sentinels != nil {
		mode = machine.ModeSentinel
	}
	pool.SetSentinelTopology(mode == machine.ModeSentinel)
	w.obs.Spec = machine.Spec{
		Generation:       vc.Generation,
		Mode:             mode,
		Shards:           shards,
		Replicas:         want - 1,
		Revision:         desired.Revision,
		Persistence:      kube.Persistence(vc),
		FsyncAlways:      kube.FsyncAlways(vc),
		MinSyncReplicas:  int(minSync),
		FailureThreshold: int(spec.Failover.FailureThreshold),
		FenceTimeout:     fence,
		BootstrapFrom:    vc.Annotations[v1beta1.AnnotationBootstrapFrom],
		FailoverWithout:  podList(vc.Annotations[v1beta1.AnnotationFailoverWithout]),
		Hibernate:        spec.Hibernate,
	}
	if mode == machine.ModeSentinel {
		w.obs.Spec.Sentinels, w.obs.Spec.SentinelSettings = sentinelSpec(spec.Sentinel)
		w.obs.Spec.SentinelRevision = desired.Sentinels.Revision
	}
	if spec.Storage.Size != nil {
		w.obs.Spec.StorageBytes = spec.Storage.Size.Value()
	}
	w.obs.Objects = objectsOf(w.sets)
	if mode == machine.ModeSentinel {
		if w.obs.Objects.Sentinels, w.obs.Objects.SentinelRevision, err = r.sentinelSet(ctx, vc); err != nil {
			return nil, err
		}
	}
	names := map[string]podPlace{}
	for sh := 0; sh < max(shards, w.obs.Objects.Shards); sh++ {
		for i := 0; i < want; i++ {
			names[desired.Names.PodName(sh, i)] = podPlace{sh, i}
		}
	}
	for name := range w.pods {
		if sh, ord, ok := desired.Names.ShardAndOrdinal(name); ok {
			names[name] = podPlace{sh, ord}
		}
	}
	nodes := make([]machine.Node, 0, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	// Surveys run in parallel: an unreachable node costs one timeout for the whole round. A
	// survey gets at most one probe interval: a node that does not answer within it failed
	// this probe, and with the next probe due right after (see turn), FailureThreshold failed
	// probes take interval x threshold, not threshold x the dial timeout (found by
	// TestOperatorCutOffFromThePrimaryDoesNotFailOver: a blackholed primary took 2 failed
	// probes in 8 s).
	w.interval = time.Duration(spec.Failover.ProbeIntervalSeconds) * time.Second
	for name, at := range names {
		n := machine.Node{Name: name, Shard: at.shard, Ordinal: at.ordinal}
		pod := w.pods[name]
		if pod != nil {
			n.Pod = podFacts(pod)
		}
		// A claim older than the cluster was kept from a deleted cluster of the same name
		// (claims outlive their cluster): the node may start with its data.
		if c := w.claims[name]; c != nil {
			n.Pod.VolumeFromBefore = keptFromBefore(c, vc)
			n.Pod.VolumeBytes = c.Spec.Resources.Requests.Storage().Value()
		}
		if pod != nil {
			n.Pod.StartError = podTrouble(pod, w.claims[name], n.Pod.StartError)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cached := false // the prober surveyed, and counted, this probe
			if n.Pod.Exists && n.Pod.IP != "" && n.Pod.Running {
				container := valkeyContainerID(pod)
				// The prober's survey of this very process, recent enough, is not sent again
				// (a node that does not answer costs its prober the timeout, not this turn).
				var res probeResult
				if res, cached = r.prober.latest(vc.UID, name, n.Pod.IP, container, r.acted.get(vc.UID, "")); !cached {
					res.v, res.st, res.err = surveyWithin(ctx, pool, n.Pod.IP, w.interval)
				}
				if res.err == nil {
					n.Reachable, n.Valkey = true, res.v
					r.answered.update(vc.UID, name, func(string, bool) (string, bool) { return container, container != "" })
					mu.Lock()
					w.stats[name] = res.st
					mu.Unlock()
				} else {
					last := r.answered.get(vc.UID, name)
					n.Pod.Restarted = last != "" && container != "" && container != last
					mu.Lock()
					w.surveyErrs[name] = res.err.Error()
					mu.Unlock()
				}
			}
			if cached {
				n.FailedProbes = r.probes.get(vc.UID, name)
			} else {
				n.FailedProbes = r.probes.count(vc.UID, name, n.Reachable)
			}
			mu.Lock()
			nodes = append(nodes, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(nodes, func(i, j int) bool {
		if nodes[i].Shard != nodes[j].Shard {
			return nodes[i].Shard < nodes[j].Shard
		}
		return nodes[i].Ordinal < nodes[j].Ordinal
	})
	w.obs.Nodes = nodes
	if mode == machine.ModeCluster {
		machine.ReadClusterBus(w.obs.Nodes)
	}
	machine.CompareKeys(w.obs.Nodes)
	w.obs.ClaimsBeyond = claimsBeyond(w.claims, names, desired.Names, vc)
	w.obs.IdleClaims = idleClaims(w.claims, w.pods, w.obs.Objects, desired.Names)
	keep := map[string]bool{}
	for _, n := range nodes {
		if n.Pod.IP != "" {
			keep[valkey.Addr(n.Pod.IP)] = true
		}
	}
	if mode == machine.ModeSentinel {
		if w.obs.Sentinels, err = r.observeSentinels(ctx, vc, pool, w.interval, w.surveyErrs, w.obs.Objects.Sentinels); err != nil {
			return nil, err
		}
		for _, s := range w.obs.Sentinels {
			if s.IP != "" {
				keep[valkey.SentinelAddr(s.IP)] = true
			}
		}
	}
	pool.Retain(keep)
	observeCertificates(ctx, w)
	return w, nil
}

// keptFromBefore reports whether claim c is older than the cluster: kept from a deleted cluster
// of the same name (claims outlive their cluster), so it may hold data.
func keptFromBefore(c *corev1.PersistentVolumeClaim, vc *v1beta1.ValkeyCluster) bool {
	return c.CreationTimestamp.Before(&vc.CreationTimestamp)
}

// podPlace is where a pod sits: its shard and ordinal.
type podPlace struct{ shard, ordinal int }

// claimsBeyond lists the claims kept from before the cluster (older than it) whose pods are
// not among the observed nodes: ordinals or shards the spec no longer asks for, whose data a
// first bootstrap must not go on without. Sorted by name: the machine is given no map order.
func claimsBeyond(claims map[string]*corev1.PersistentVolumeClaim, observed map[string]podPlace, names kube.Names, vc *v1beta1.ValkeyCluster) []machine.Claim {
	var out []machine.Claim
	for pod, c := range claims {
		if _, seen := observed[pod]; seen || !keptFromBefore(c, vc) {
			continue
		}
		if sh, ord, ok := names.ShardAndOrdinal(pod); ok {
			out = append(out, machine.Claim{Name: pod, Shard: sh, Ordinal: ord})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// idleClaims lists the claims, of any age, whose pods do not exist on places the StatefulSets
// do not ask for (objects): a scale-down kept them and a scale-up starts a pod on their data.
// Sorted by name: the machine is given no map order.
func idleClaims(claims map[string]*corev1.PersistentVolumeClaim, pods map[string]*corev1.Pod, objects machine.Objects, names kube.Names) []machine.Claim {
	var out []machine.Claim
	for pod := range claims {
		if pods[pod] != nil {
			continue
		}
		sh, ord, ok := names.ShardAndOrdinal(pod)
		if !ok || (sh < objects.Shards && ord <= objects.Replicas) {
			continue
		}
		out = append(out, machine.Claim{Name: pod, Shard: sh, Ordinal: ord})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// valkeyContainerID is the ID of the pod's valkey container ("" when none runs): a new one
// each time the container restarts.
func valkeyContainerID(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "valkey" && c.State.Running != nil {
			return c.ContainerID
		}
	}
	return ""
}

func podFacts(pod *corev1.Pod) machine.Pod {
	// A terminating pod still exists: its process may take writes until it has exited (a
	// graceful shutdown), so it only counts as gone once the object is, or its container
	// stopped running.
	p := machine.Pod{Exists: true, IP: pod.Status.PodIP, Revision: pod.Annotations[kube.AnnotationRevision], Terminating: pod.DeletionTimestamp != nil}
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "valkey" {
			p.Running = c.State.Running != nil
			p.StartError = startError(c)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			p.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return p
}

// statefulSets reads the cluster's StatefulSets by shard: the one named after the cluster in a
// replication group, <name>-s<N> in a Cluster topology.
func (r *Reconciler) statefulSets(ctx context.Context, vc *v1beta1.ValkeyCluster, names kube.Names) (map[int]*appsv1.StatefulSet, error) {
	sets := map[int]*appsv1.StatefulSet{}
	if names.Sharded {
		var list appsv1.StatefulSetList
		if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SelectorLabels(vc))); err != nil {
			return nil, err
		}
		for i := range list.Items {
			sts := &list.Items[i]
			for sh := 0; sh < maxShards && metav1.IsControlledBy(sts, vc); sh++ {
				if sts.Name == names.ShardSet(sh) {
					sets[sh] = sts
					break
				}
			}
		}
		return sets, nil
	}
	var sts appsv1.StatefulSet
	key := types.NamespacedName{Namespace: vc.Namespace, Name: names.StatefulSet}
	err := r.Client.Get(ctx, key, &sts)
	if err == nil && !metav1.IsControlledBy(&sts, vc) {
		// Someone else's of that name, with the labels: the cache keeps only its metadata, and
		// it runs none of this cluster's pods (Apply reports it in the way).
		err = apierrors.NewNotFound(appsv1.Resource("statefulsets"), key.Name)
	} else if apierrors.IsNotFound(err) {
		// The cache holds only labelled objects: one of ours that lost its labels is still
		// there (someone else's of that name is not ours: Apply reports it).
		if err = r.apiReader().Get(ctx, key, &sts); err == nil && !metav1.IsControlledBy(&sts, vc) {
			err = apierrors.NewNotFound(appsv1.Resource("statefulsets"), key.Name)
		}
	}
	switch {
	case err == nil:
		sets[0] = &sts
	case !apierrors.IsNotFound(err):
		return nil, err
	}
	return sets, nil
}

// maxShards bounds the shard numbers looked for (spec.shards is at most 128).
const maxShards = 1024

// objectsOf summarises the StatefulSets for the machine. StatefulSets that disagree (a shard
// missing below the highest, pod counts or revisions that differ: an EnsureObjects carried
// out half-way) report no revision, so that the machine asks for its objects again.
func objectsOf(sets map[int]*appsv1.StatefulSet) machine.Objects {
	var o machine.Objects
	if len(sets) == 0 {
		return o
	}
	for sh := range sets {
		o.Shards = max(o.Shards, sh+1)
	}
	consistent := len(sets) == o.Shards
	first := true
	for sh := 0; sh < o.Shards; sh++ {
		sts := sets[sh]
		if sts == nil {
			continue
		}
		// No pod at all (a hibernation's stop) reads as machine.StoppedReplicas.
		replicas := 0
		if sts.Spec.Replicas != nil {
			replicas = int(*sts.Spec.Replicas) - 1
		}
		rev := sts.Spec.Template.Annotations[kube.AnnotationRevision]
		if first {
			o.Replicas, o.Revision, first = replicas, rev, false
			continue
		}
		consistent = consistent && replicas == o.Replicas && rev == o.Revision
		// The largest pod count counts: a scale-down is unsafe until every shard is done.
		o.Replicas = max(o.Replicas, replicas)
	}
	if !consistent {
		o.Revision = ""
	}
	return o
}

// surveyWithin surveys one node and gives up at the deadline, even while the pool is still
// dialling it (a dial takes the pool's whole timeout and does not take a context); the
// abandoned survey ends on its own within that timeout.
func surveyWithin(ctx context.Context, pool *valkey.Pool, ip string, d time.Duration) (machine.Valkey, valkey.Stats, error) {
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   machine.Valkey
		st  valkey.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, st, err := pool.SurveyWithStats(sctx, ip)
		done <- result{v, st, err}
	}()
	select {
	case r := <-done:
		return r.v, r.st, r.err
	case <-sctx.Done():
		return machine.Valkey{}, valkey.Stats{}, fmt.Errorf("%s: no answer within %s", ip, d)
	}
}

// startError is why a container that does not run failed last time: the end of its output
// (the termination message kubelet takes from the logs, FallbackToLogsOnError), from the
// line that names the error on, on one line and bounded. A container that runs again but is
// not ready keeps its last failure: in a crash loop it runs for a few milliseconds between
// back-offs, and the reason must not blink out of status each time it does.
func startError(c corev1.ContainerStatus) string {
	if c.State.Running != nil && c.Ready {
		return ""
	}
	t := c.State.Terminated
	if t == nil {
		t = c.LastTerminationState.Terminated
	}
	if t == nil || t.ExitCode == 0 || strings.TrimSpace(t.Message) == "" {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(t.Message), "\n")
	from := max(0, len(lines)-4)
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.ToLower(lines[i]); strings.Contains(l, "fatal") || strings.Contains(l, "error") {
			from = i
			break
		}
	}
	var kept []string
	for _, l := range lines[from:] {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	msg := strings.Join(kept, " ")
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	return msg
}

// podList splits a comma-separated list of pod names, dropping blanks.
func podList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
