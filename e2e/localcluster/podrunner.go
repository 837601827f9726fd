package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podRunner is the node agent's work for one Pod: its IP, volumes, init containers,
// containers with their restarts and probes, its status, and its termination.
type podRunner struct {
	cluster *Cluster
	cs      kubernetes.Interface
	node    *node
	ip      netip.Addr
	ipKey   string
	net     *podNet // the Pod's network namespace, from prepare until the containers are gone
	dir     string
	vols    *podVolumes

	ctx    context.Context // ends when the Pod is gone for good
	cancel context.CancelFunc

	mu         sync.Mutex
	pod        *corev1.Pod
	inits      []*container
	containers []*container
	initDone   bool
	failed     string // reason the Pod failed for good (an init container under Never)
	startTime  *metav1.Time
	terminate  chan time.Duration // a deletion was requested, with its grace period
	terminated bool
	done       chan struct{} // closed when the runner has finished and cleaned up

	dirty chan struct{}

	// startGate is held by a fault that must keep containers down (WipeVolumes); every
	// start takes it shared.
	startGate sync.RWMutex
}

func newPodRunner(cl *Cluster, pod *corev1.Pod, n *node) *podRunner {
	r := &podRunner{
		cluster:   cl,
		cs:        cl.cs,
		node:      n,
		pod:       pod.DeepCopy(),
		dir:       filepath.Join(cl.slot.dir, "pods", string(pod.UID)),
		terminate: make(chan time.Duration, 1),
		done:      make(chan struct{}),
		dirty:     make(chan struct{}, 1),
	}
	for _, c := range pod.Spec.InitContainers {
		r.inits = append(r.inits, &container{spec: c, init: true, state: waiting("PodInitializing")})
	}
	for _, c := range pod.Spec.Containers {
		reason := "ContainerCreating"
		if len(pod.Spec.InitContainers) > 0 {
			reason = "PodInitializing"
		}
		r.containers = append(r.containers, &container{spec: c, state: waiting(reason)})
	}
	r.ctx, r.cancel = context.WithCancel(cl.ctx)
	return r
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// changed asks the status writer to post the Pod's status again.
func (r *podRunner) changed() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

func (r *podRunner) currentPod() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod
}

func (r *podRunner) update(pod *corev1.Pod) {
	r.mu.Lock()
	r.pod = pod.DeepCopy()
	r.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := r.gracePeriod()
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		select {
		case r.terminate <- grace:
		default:
		}
	}
}

func (r *podRunner) gracePeriod() time.Duration {
	p := r.currentPod()
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

func (r *podRunner) event(typ, reason, msg string) {
	p := r.currentPod()
	now := metav1.Now()
	_, _ = r.cs.CoreV1().Events(p.Namespace).Create(context.Background(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Type:           typ, Reason: reason, Message: msg,
		Source:         corev1.EventSource{Component: "kubelet", Host: r.node.name},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
}

// run is the Pod's life on its node. It returns when the Pod was deleted and cleaned up.
func (r *podRunner) run() {
	defer close(r.done)
	defer r.cancel()
	go r.statusWriter()
	ok := r.prepare()
	var wg sync.WaitGroup
	if ok && r.runInits() {
		r.mu.Lock()
		r.initDone = true
		r.mu.Unlock()
		r.changed()
		for _, c := range r.containers {
			wg.Add(2)
			go func() { defer wg.Done(); r.supervise(c) }()
			go func() { defer wg.Done(); r.probeLoop(r.ctx, c) }()
		}
		go r.refreshLoop()
	}
	grace, gone := r.waitTermination()
	r.shutdown(grace)
	r.cancel()
	wg.Wait()
	// A supervisor may have started a process while the shutdown ran: nothing outlives it.
	for _, c := range append(append([]*container{}, r.containers...), r.inits...) {
		c.stop(0)
	}
	// Before the object goes: a Pod re-created under the same name may get the same address,
	// which must then be free on the bridge.
	r.removeNet()
	if !gone {
		r.finalDelete()
	}
	r.cleanUp()
}

// prepare assigns the IP and sets up the volumes, retrying while a source is missing (a
// Secret not created yet), as kubelet does.
func (r *podRunner) prepare() bool {
	for _, d := range []string{r.dir, filepath.Join(r.dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.failed = err.Error()
			return false
		}
	}
	r.changed()
	// The sandbox first, as kubelet does: every container, exec and probe of the Pod joins
	// this namespace.
	pn, err := r.cluster.pnet.addPod(r.ip)
	if err != nil {
		r.mu.Lock()
		r.failed = err.Error()
		r.mu.Unlock()
		for _, c := range r.containers {
			r.setWaiting(c, "ContainerCreating", "failed to create pod sandbox: "+err.Error())
		}
		r.event(corev1.EventTypeWarning, "FailedCreatePodSandBox", err.Error())
		return false
	}
	r.mu.Lock()
	r.net = pn
	r.mu.Unlock()
	if np := r.cluster.np; np != nil {
		np.trigger() // its table, if a policy isolates it, within tens of milliseconds
	}
	for attempt := 0; ; attempt++ {
		err := r.setUpVolumes(r.ctx)
		if err == nil {
			return true
		}
		for _, c := range r.containers {
			r.setWaiting(c, "ContainerCreating", err.Error())
		}
		if attempt%10 == 0 {
			r.event(corev1.EventTypeWarning, "FailedMount", err.Error())
		}
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(time.Second):
		}
		if r.deleting() {
			return false
		}
	}
}

func (r *podRunner) deleting() bool {
	return r.currentPod().DeletionTimestamp != nil
}

// refreshLoop keeps ConfigMap, Secret, projected and downward API volumes current.
func (r *podRunner) refreshLoop() {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			if r.node.isStopped() {
				continue // a stopped node's kubelet refreshes nothing
			}
			_ = r.refreshVolumes(r.ctx, false)
		}
	}
}

// waitTermination blocks until a deletion is requested (returning its grace period) or the
// Pod vanished from the API (gone: there is nothing left to delete).
func (r *podRunner) waitTermination() (time.Duration, bool) {
	select {
	case g := <-r.terminate:
		// A node that is down cannot act on the deletion; it does once it is back, as a
		// rebooted kubelet would.
		r.node.waitRunning(r.cluster.ctx)
		return g, false
	case <-r.ctx.Done():
		return 0, true
	}
}

// shutdown runs preStop hooks and stops every container within the grace period.
func (r *podRunner) shutdown(grace time.Duration) {
	r.mu.Lock()
	r.terminated = true
	r.mu.Unlock()
	deadline := time.Now().Add(grace)
	var wg sync.WaitGroup
	for _, c := range append(append([]*container{}, r.containers...), r.inits...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h := c.spec.Lifecycle; h != nil && h.PreStop != nil && h.PreStop.Exec != nil && c.pid() != 0 {
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				_, _ = r.execIn(ctx, c, h.PreStop.Exec.Command)
				cancel()
			}
			c.stop(time.Until(deadline))
		}()
	}
	wg.Wait()
	r.changed()
}

// finalDelete removes the Pod object once its containers are gone, as kubelet does with a
// zero grace period and a UID precondition, so a re-created Pod of the same name is safe.
func (r *podRunner) finalDelete() {
	p := r.currentPod()
	r.writeStatus(context.Background())
	zero := int64(0)
	err := r.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &p.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		fmt.Fprintf(r.cluster.opts.Log, "[node-agent] deleting pod %s/%s: %v\n", p.Namespace, p.Name, err)
	}
}

// cleanUp removes the Pod's own directories; claim directories stay with their claims.
func (r *podRunner) cleanUp() {
	r.removeNet()
	r.cluster.cg.remove(string(r.currentPod().UID))
	if r.cluster.mem != nil {
		r.cluster.mem.remove(string(r.currentPod().UID))
	}
	_ = os.RemoveAll(r.dir)
	if r.ipKey == string(r.currentPod().UID) {
		r.cluster.ipam.release(r.ipKey)
	}
}

func (r *podRunner) isTerminated() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.terminated
}

// cancelWhenGone ends the Pod at once: its object is gone, or the whole cluster stops.
func (r *podRunner) cancelWhenGone() {
	r.cancel()
	for _, c := range append(append([]*container{}, r.containers...), r.inits...) {
		c.stop(0)
	}
}

// removeNet deletes the Pod's network namespace, once.
func (r *podRunner) removeNet() {
	r.mu.Lock()
	pn := r.net
	r.net = nil
	r.mu.Unlock()
	if pn != nil {
		r.cluster.pnet.removePod(pn)
	}
}

// netns is the path of the Pod's network namespace ("" before it has one or after it is gone).
func (r *podRunner) netns() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.net == nil {
		return ""
	}
	return r.net.nsPath()
}
