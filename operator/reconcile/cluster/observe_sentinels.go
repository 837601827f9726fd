package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// sentinelSpec is spec.sentinel (defaulted) as the machine reads it: how many sentinels run,
// and the settings each is told (parallel-syncs 1: a failover re-points one replica at a
// time, so the others still serve reads).
func sentinelSpec(s *v1beta1.SentinelSpec) (int, machine.SentinelSettings) {
	if s == nil {
		return 0, machine.SentinelSettings{}
	}
	settings := machine.SentinelSettings{Quorum: int(s.QuorumOrDefault()), ParallelSyncs: 1}
	if s.DownAfter != nil {
		settings.DownAfterMillis = s.DownAfter.Milliseconds()
	}
	if s.FailoverTimeout != nil {
		settings.FailoverTimeoutMillis = s.FailoverTimeout.Milliseconds()
	}
	return int(s.Replicas), settings
}

// observeSentinels surveys every sentinel pod of the cluster, and names each of the count the
// sentinels' StatefulSet asks for that has no pod (unreachable): the machine counts a majority
// of those sentinels or of those it sees, whichever is more. Surveys run in parallel, each
// within interval; why one did not answer goes into errs (by pod name, as the data nodes').
func (r *Reconciler) observeSentinels(ctx context.Context, vc *v1beta1.ValkeyCluster, pool *valkey.Pool, interval time.Duration, errs map[string]string, count int) ([]machine.Sentinel, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(vc.Namespace), client.MatchingLabels(kube.SentinelSelectorLabels(vc))); err != nil {
		return nil, err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	if count <= 0 {
		count = int(vc.Spec.Sentinel.Replicas) // the StatefulSet is being made
	}
	for i := 0; i < count; i++ {
		if name := fmt.Sprintf("%s-%d", kube.SentinelSetName(vc), i); byName[name] == nil {
			byName[name] = nil
		}
	}
	out := make([]machine.Sentinel, 0, len(byName))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, pod := range byName {
		s := machine.Sentinel{Name: name}
		if pod != nil {
			s.Revision, s.Terminating, s.PodReady = sentinelPodRevision(pod), pod.DeletionTimestamp != nil, podFacts(pod).Ready
		}
		if pod == nil || pod.Status.PodIP == "" || !sentinelRunning(pod) {
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, interval)
			defer cancel()
			got, err := pool.SurveySentinel(sctx, pod.Status.PodIP)
			mu.Lock()
			if err != nil {
				got = machine.Sentinel{IP: pod.Status.PodIP}
				errs[name] = err.Error()
				logFrom(ctx).V(1).Info("sentinel survey failed", "sentinel", name, "error", err.Error())
			}
			got.Name, got.Revision, got.Terminating, got.PodReady = name, s.Revision, s.Terminating, s.PodReady
			out = append(out, got)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The machine is given no map order.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// sentinelSet is how many sentinels the cluster's sentinel StatefulSet asks for and the
// revision of its pod template (0 and "" when it does not exist yet, or is not this
// cluster's).
func (r *Reconciler) sentinelSet(ctx context.Context, vc *v1beta1.ValkeyCluster) (int, string, error) {
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: kube.SentinelSetName(vc)}, &sts)
	switch {
	case apierrors.IsNotFound(err):
		return 0, "", nil
	case err != nil:
		return 0, "", err
	case !metav1.IsControlledBy(&sts, vc) || sts.Spec.Replicas == nil:
		return 0, "", nil
	}
	return int(*sts.Spec.Replicas), sts.Spec.Template.Annotations[kube.AnnotationRevision], nil
}

// sentinelPodRevision is the revision of the template pod was made from, for the machine: a
// pod made before the sentinels' template had one reads as one no template has, so that it
// is restarted onto the current template as any other stale pod.
func sentinelPodRevision(pod *corev1.Pod) string {
	if rev := pod.Annotations[kube.AnnotationRevision]; rev != "" {
		return rev
	}
	return "none"
}

// sentinelRunning reports whether the pod's sentinel container runs.
func sentinelRunning(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "sentinel" {
			return c.State.Running != nil
		}
	}
	return false
}

// sentinelStatuses is status.sentinels: each sentinel's answers, the primary it names by pod,
// and why one that runs did not answer (errs, by pod name; nil outside the Sentinel topology).
func sentinelStatuses(obs machine.Observation, errs map[string]string) []v1beta1.SentinelStatus {
	if len(obs.Sentinels) == 0 {
		return nil
	}
	podAt := map[string]string{}
	for _, n := range obs.Nodes {
		if n.Pod.IP != "" {
			podAt[n.Pod.IP] = n.Name
		}
	}
	out := make([]v1beta1.SentinelStatus, 0, len(obs.Sentinels))
	for _, s := range obs.Sentinels {
		st := v1beta1.SentinelStatus{Pod: s.Name, IP: s.IP, Answering: s.Reachable}
		if !s.Reachable {
			st.Error = errs[s.Name]
		}
		if s.Reachable && s.Monitoring {
			st.Monitoring, st.ConfigEpoch, st.OtherSentinels = true, int64(s.ConfigEpoch), int32(s.Peers)
			st.FailingOver, st.PrimaryDown = s.FailingOver, s.PrimaryDown
			st.Primary = s.PrimaryIP
			if pod := podAt[s.PrimaryIP]; pod != "" {
				st.Primary = pod
			}
		}
		out = append(out, st)
	}
	return out
}

// sentinelCounts is how many sentinels answered, and how many of those name p's recorded
// primary (at its pod's address), for the metrics.
func sentinelCounts(obs machine.Observation, p machine.Persisted) (answering, naming int) {
	primaryIP := ""
	if len(p.Shards) > 0 {
		for _, n := range obs.Nodes {
			if n.Name == p.Shards[0].Primary {
				primaryIP = n.Pod.IP
			}
		}
	}
	for _, s := range obs.Sentinels {
		if !s.Reachable {
			continue
		}
		answering++
		if s.Monitoring && primaryIP != "" && s.PrimaryIP == primaryIP {
			naming++
		}
	}
	return answering, naming
}
