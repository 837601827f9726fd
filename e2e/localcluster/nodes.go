package localcluster

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// node is one Node registered by the agent. A stopped node runs no containers and stops
// renewing its lease, as a powered-off machine would.
type node struct {
	name string
	zone string
	ip   netip.Addr
	// maxPods is the Pods the node takes (kubelet's --max-pods; 0: kubelet's default, 110).
	maxPods int
	// kubeletPort is where the agent serves this node's kubelet API on ip (kubeletserver.go).
	kubeletPort int32

	mu       sync.Mutex
	stopped  bool
	started  chan struct{} // closed when a stopped node starts again
	killedAt time.Time     // when StopNode last killed its containers
}

func (n *node) isStopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stopped
}

const heartbeatInterval = 5 * time.Second

func nodeObject(n *node) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             *resource.NewQuantity(int64(cmp.Or(n.maxPods, 110)), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("50Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.name,
			Labels: map[string]string{
				"kubernetes.io/hostname":        n.name,
				"kubernetes.io/os":              "linux",
				"kubernetes.io/arch":            "amd64",
				"topology.kubernetes.io/zone":   n.zone,
				"topology.kubernetes.io/region": "local",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    alloc,
			Allocatable: alloc,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.ip.String()},
				{Type: corev1.NodeHostName, Address: n.name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: n.kubeletPort}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  "v1.36.3-localcluster",
				OperatingSystem: "linux",
				Architecture:    "amd64",
			},
		},
	}
}

// registerNode creates the Node (or takes over one left by an earlier agent of this cluster)
// and reports it Ready.
func registerNode(ctx context.Context, cs kubernetes.Interface, n *node) error {
	obj := nodeObject(n)
	if _, err := cs.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", n.name, err)
	}
	return setNodeReady(ctx, cs, n, true, "KubeletReady", "node agent is posting ready status")
}

func setNodeReady(ctx context.Context, cs kubernetes.Interface, n *node, ready bool, reason, msg string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cs.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := nodeObject(n)
		cur.Status.Capacity, cur.Status.Allocatable = want.Status.Capacity, want.Status.Allocatable
		cur.Status.Addresses, cur.Status.NodeInfo = want.Status.Addresses, want.Status.NodeInfo
		cur.Status.DaemonEndpoints = want.Status.DaemonEndpoints
		status := corev1.ConditionTrue
		if !ready {
			status = corev1.ConditionUnknown
		}
		now := metav1.Now()
		cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		replaced := false
		for i, c := range cur.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == status {
					cond.LastTransitionTime = c.LastTransitionTime
				}
				cur.Status.Conditions[i] = cond
				replaced = true
			}
		}
		if !replaced {
			cur.Status.Conditions = append(cur.Status.Conditions, cond)
		}
		cur, err = cs.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		// The node lifecycle controller is not run: the agent does its taint work. It lifts
		// the not-ready taint that admission puts on every new Node, and taints a stopped
		// node unreachable so the scheduler keeps Pods off it.
		taints := withoutTaint(withoutTaint(cur.Spec.Taints, corev1.TaintNodeUnreachable), corev1.TaintNodeNotReady)
		if !ready {
			taints = append(taints, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule})
		}
		if len(taints) == len(cur.Spec.Taints) && ready {
			return nil
		}
		cur.Spec.Taints = taints
		_, err = cs.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	out := taints[:0:0]
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}

// heartbeat renews the node's lease in kube-node-lease while the node runs.
func heartbeat(ctx context.Context, cs kubernetes.Interface, n *node) {
	t := time.NewTicker(heartbeatInterval)
	defer t.Stop()
	for {
		if !n.isStopped() {
			renewLease(ctx, cs, n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func renewLease(ctx context.Context, cs kubernetes.Interface, n *node) {
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, _ = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(n.name),
				LeaseDurationSeconds: ptr.To(int32(40)),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return
	}
	if err != nil {
		return
	}
	l.Spec.RenewTime = &now
	_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
}

// waitRunning blocks while the node is stopped; false when ctx ended first.
func (n *node) waitRunning(ctx context.Context) bool {
	for {
		n.mu.Lock()
		stopped, ch := n.stopped, n.started
		n.mu.Unlock()
		if !stopped {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

func (n *node) setStopped(stopped bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped == stopped {
		return
	}
	n.stopped = stopped
	if stopped {
		n.started = make(chan struct{})
	} else if n.started != nil {
		close(n.started)
	}
}
