package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// What the upgrade test holds the data plane to: a snapshot of the pods before and after the
// upgrade's roll, and a watch of the clusters' states throughout.

// dataPlane is what an upgrade of the operator is held to account for.
type dataPlane struct {
	pods     map[string]string // pod -> UID, restart counts, INFO run_id
	sets     map[string]int64  // StatefulSet -> generation
	lastSeqs map[string]int64  // cluster -> its newest history entry
}

func snapshotDataPlane(t *testing.T, ctx context.Context, kc client.Client, ns string, clusters []upgradeCluster) dataPlane {
	t.Helper()
	d := dataPlane{pods: map[string]string{}, sets: map[string]int64{}, lastSeqs: map[string]int64{}}
	for _, c := range clusters {
		var vc v1alpha1.ValkeyCluster
		if err := kc.Get(ctx, client.ObjectKeyFromObject(c.vc), &vc); err != nil {
			t.Fatal(err)
		}
		if h := vc.Status.History; len(h) > 0 {
			d.lastSeqs[vc.Name] = h[len(h)-1].Seq
		}
		var s corev1.Secret
		if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.NamesOf(&v1beta1.ValkeyCluster{ObjectMeta: vc.ObjectMeta}).Auth}, &s); err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := kc.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: vc.Name}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != c.pods {
			t.Fatalf("%s has %d pods, want %d", vc.Name, len(pods.Items), c.pods)
		}
		for _, p := range pods.Items {
			restarts := []string{}
			for _, cs := range p.Status.ContainerStatuses {
				restarts = append(restarts, fmt.Sprintf("%s:%d", cs.Name, cs.RestartCount))
			}
			slices.Sort(restarts)
			runID := nodeRunID(t, ctx, p.Status.PodIP, string(s.Data[kube.KeyClientPassword]))
			d.pods[p.Name] = fmt.Sprintf("uid %s restarts %v run_id %s", p.UID, restarts, runID)
		}
	}
	var sets appsv1.StatefulSetList
	if err := kc.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Items {
		d.sets[s.Name] = s.Generation
	}
	return d
}

// rolled says what is wrong with a roll from d to after: every pod is still there under its
// name and is a new one (a new UID and a new run of valkey-server), and no StatefulSet came or
// went.
func (d dataPlane) rolled(after dataPlane) []string {
	var out []string
	for name, v := range d.pods {
		switch a, ok := after.pods[name]; {
		case !ok:
			out = append(out, fmt.Sprintf("pod %s is gone after the upgrade", name))
		case a == v:
			out = append(out, fmt.Sprintf("pod %s was not rolled: %s", name, v))
		}
	}
	if len(after.pods) != len(d.pods) || len(after.sets) != len(d.sets) {
		out = append(out, fmt.Sprintf("pods %d -> %d, StatefulSets %d -> %d", len(d.pods), len(after.pods), len(d.sets), len(after.sets)))
	}
	return out
}

// historySince reports whether vc recorded event in a transition after seq.
func historySince(vc *v1alpha1.ValkeyCluster, seq int64, event string) bool {
	for _, h := range vc.Status.History {
		if h.Seq > seq && h.Event == event {
			return true
		}
	}
	return false
}

// rollEnd is the event that ends a cluster's roll in its history. A Standalone cluster has no
// replica to hand over to: the machine records its single pod's restart as a lost primary
// that comes back (primary-lost, then failover-complete), not as rollout-complete.
func rollEnd(vc *v1alpha1.ValkeyCluster) string {
	if vc.Spec.Topology == v1alpha1.TopologyStandalone {
		return "failover-complete"
	}
	return "rollout-complete"
}

// nodeRunID asks a node itself (INFO server, as the application user) for its run_id, which a
// new process of valkey-server changes.
func nodeRunID(t *testing.T, ctx context.Context, ip, pass string) string {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, "6379")}, Password: pass,
		DisableCache: true, ForceSingleClient: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatalf("%s: %v", ip, err)
	}
	defer c.Close()
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatalf("INFO server of %s: %v", ip, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	t.Fatalf("INFO server of %s has no run_id", ip)
	return ""
}

// stateWatch collects every state other than Steady that a watch of the namespace's
// ValkeyClusters delivers, re-watching from the last resourceVersion when the API server ends
// the watch (it does when a CRD changes) or cannot serve it for a moment (the conversion
// webhook moving to the new operator).
type stateWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   []string
	// versions is every resourceVersion delivered per cluster: the watch must be seen to
	// deliver the upgrade's own writes (the migration's rewrite of each cluster) for its
	// silence about other states to mean anything.
	versions map[string][]string
}

func watchStates(ctx context.Context, kc client.WithWatch, ns string) *stateWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &stateWatch{cancel: cancel, done: make(chan struct{}), versions: map[string][]string{}}
	go func() {
		defer close(w.done)
		rv := ""
		for ctx.Err() == nil {
			if rv == "" {
				var list v1alpha1.ValkeyClusterList
				if err := kc.List(ctx, &list, client.InNamespace(ns)); err != nil {
					time.Sleep(200 * time.Millisecond)
					continue
				}
				for i := range list.Items {
					w.note(&list.Items[i])
				}
				rv = list.ResourceVersion
			}
			wi, err := kc.Watch(ctx, &v1alpha1.ValkeyClusterList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Bookmark:
					if vc, ok := ev.Object.(*v1alpha1.ValkeyCluster); ok {
						rv = vc.ResourceVersion
						if ev.Type != watch.Bookmark {
							w.note(vc)
						}
					}
				case watch.Error:
					rv = "" // too old: list again
				}
			}
			wi.Stop()
		}
	}()
	return w
}

func (w *stateWatch) note(vc *v1alpha1.ValkeyCluster) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if vs := w.versions[vc.Name]; len(vs) == 0 || vs[len(vs)-1] != vc.ResourceVersion {
		w.versions[vc.Name] = append(vs, vc.ResourceVersion)
	}
	if vc.Status.State != v1alpha1.StateSteady {
		w.seen = append(w.seen, fmt.Sprintf("%s %s (resourceVersion %s)", vc.Name, vc.Status.State, vc.ResourceVersion))
	}
}

// stop ends the watch and returns the states other than Steady it saw, and how many versions
// of each cluster it saw.
func (w *stateWatch) stop() (states []string, versions map[string]int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	versions = map[string]int{}
	for name, vs := range w.versions {
		versions[name] = len(vs)
	}
	return w.seen, versions
}
