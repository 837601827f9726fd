package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// statusWriter posts the Pod's status whenever something changed, coalescing bursts.
func (r *podRunner) statusWriter() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.dirty:
		}
		// Let a burst of changes (a container and its probe) settle into one write.
		time.Sleep(20 * time.Millisecond)
		if r.node.isStopped() {
			continue // a powered-off node posts nothing; markNodeDown reported it once
		}
		r.writeStatus(r.ctx)
	}
}

func (r *podRunner) writeStatus(ctx context.Context) {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p := r.currentPod()
		cur, err := r.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != p.UID {
			return nil
		}
		want := r.computeStatus(cur.Status)
		if equality.Semantic.DeepEqual(want, cur.Status) {
			return nil
		}
		cur.Status = want
		_, err = r.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		fmt.Fprintf(r.cluster.opts.Log, "[node-agent] status of %s: %v\n", r.currentPod().Name, err)
	}
}

// computeStatus is what kubelet would report now. Conditions owned by others (PodScheduled,
// DisruptionTarget) are kept; transition times move only when a condition changes.
func (r *podRunner) computeStatus(old corev1.PodStatus) corev1.PodStatus {
	p := r.currentPod()
	r.mu.Lock()
	initDone, failed, terminated := r.initDone, r.failed, r.terminated
	if r.startTime == nil {
		now := metav1.Now()
		r.startTime = &now
	}
	start := r.startTime
	r.mu.Unlock()

	st := old.DeepCopy()
	st.HostIP = r.node.ip.String()
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	st.PodIP = r.ip.String()
	st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	st.StartTime = start

	imageOf := func(c *container) string { return c.spec.Image }
	st.InitContainerStatuses = nil
	for _, c := range r.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status(imageOf(c)))
	}
	st.ContainerStatuses = nil
	allReady, anyRunning, allDone, allZero := true, false, true, true
	for _, c := range r.containers {
		cs := c.status(imageOf(c))
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		anyRunning = anyRunning || cs.State.Running != nil || cs.RestartCount > 0
		if t := cs.State.Terminated; t != nil {
			allZero = allZero && t.ExitCode == 0
		} else {
			allDone = false
		}
	}
	policy := p.Spec.RestartPolicy
	switch {
	case failed != "":
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "Failed", failed
	case initDone && allDone && policy != corev1.RestartPolicyAlways && (allZero || policy == corev1.RestartPolicyNever):
		if allZero {
			st.Phase = corev1.PodSucceeded
		} else {
			st.Phase = corev1.PodFailed
		}
	case terminated && allDone:
		if allZero {
			st.Phase = corev1.PodSucceeded
		} else {
			st.Phase = corev1.PodFailed
		}
	case initDone && anyRunning:
		st.Phase = corev1.PodRunning
	default:
		if st.Phase == "" || st.Phase == corev1.PodPending {
			st.Phase = corev1.PodPending
		}
	}
	ready := initDone && allReady && !terminated && st.Phase == corev1.PodRunning
	for _, g := range p.Spec.ReadinessGates {
		ready = ready && conditionTrue(old.Conditions, g.ConditionType)
	}
	setCondition(st, corev1.PodReadyToStartContainers, true, "")
	setCondition(st, corev1.PodInitialized, initDone, reasonIf(!initDone, "ContainersNotInitialized"))
	setCondition(st, corev1.ContainersReady, initDone && allReady && !terminated, reasonIf(!initDone || !allReady, "ContainersNotReady"))
	setCondition(st, corev1.PodReady, ready, reasonIf(!ready, "ContainersNotReady"))
	return *st
}

func reasonIf(b bool, reason string) string {
	if b {
		return reason
	}
	return ""
}

func conditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason string) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.Status, c.LastTransitionTime = status, metav1.Now()
		}
		c.Reason = reason
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.Now()})
}

// markNodeDown reports the Pod not ready as the node lifecycle controller does when a node
// stops posting status; the containers' last reported states stay as they were.
func (r *podRunner) markNodeDown(ctx context.Context) {
	p := r.currentPod()
	_ = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := r.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || cur.UID != p.UID {
			return err
		}
		for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
			setCondition(&cur.Status, t, false, "NodeNotReady")
		}
		for i := range cur.Status.ContainerStatuses {
			cur.Status.ContainerStatuses[i].Ready = false
		}
		_, err = r.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}
