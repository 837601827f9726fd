package localcluster

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// newRestartBackoff is a container's restart back-off with the cluster's delays (kubelet's
// by default).
func (r *podRunner) newRestartBackoff() *restartBackoff {
	return &restartBackoff{initial: r.cluster.opts.RestartBackoff, max: r.cluster.opts.MaxRestartBackoff}
}

// runInits runs the init containers in order, each to a successful exit.
func (r *podRunner) runInits() bool {
	for _, c := range r.inits {
		b := r.newRestartBackoff()
		for {
			if r.deleting() || r.ctx.Err() != nil {
				return false
			}
			if !r.node.waitRunning(r.ctx) || !r.ensureImage(c) {
				return false
			}
			if err := r.startContainer(c); err != nil {
				if !r.pause(kubeletSyncBackOff) {
					return false
				}
				continue
			}
			c.waitExit(r.ctx)
			c.mu.Lock()
			t := c.state.Terminated
			c.mu.Unlock()
			if t != nil && t.ExitCode == 0 {
				break
			}
			if r.currentPod().Spec.RestartPolicy == corev1.RestartPolicyNever {
				r.mu.Lock()
				r.failed = "init container " + c.spec.Name + " failed"
				r.mu.Unlock()
				r.changed()
				return false
			}
			if t == nil || !r.restartAfterBackoff(c, b, t.FinishedAt.Time) {
				return false
			}
		}
	}
	return true
}

// supervise runs one container for the Pod's lifetime, restarting it after it exits as the
// restart policy says, with kubelet's back-off.
func (r *podRunner) supervise(c *container) {
	b := r.newRestartBackoff()
	for {
		if !r.node.waitRunning(r.ctx) || r.deleting() || r.ctx.Err() != nil {
			return
		}
		if !r.ensureImage(c) {
			return
		}
		if err := r.startContainer(c); err != nil {
			// Kubelet leaves a container it could not create waiting with the reason
			// (CreateContainerConfigError, say), counts no restart, and tries again when its
			// pod worker syncs the Pod next.
			if !r.pause(kubeletSyncBackOff) {
				return
			}
			continue
		}
		r.event(corev1.EventTypeNormal, "Started", "Started container "+c.spec.Name)
		if !c.waitExit(r.ctx) || r.deleting() {
			return
		}
		c.mu.Lock()
		code := c.state.Terminated.ExitCode
		finished := c.state.Terminated.FinishedAt.Time
		stopping := c.stopping
		c.mu.Unlock()
		if stopping && r.deleting() {
			return
		}
		if r.node.isStopped() {
			// The node went down with the container: it starts again when the node does.
			r.countRestart(c)
			continue
		}
		switch r.currentPod().Spec.RestartPolicy {
		case corev1.RestartPolicyNever:
			return
		case corev1.RestartPolicyOnFailure:
			if code == 0 {
				return
			}
		}
		if !r.restartAfterBackoff(c, b, finished) {
			return
		}
	}
}

// restartAfterBackoff waits, as kubelet's doBackOff makes a restart wait, before the container
// that exited at finished starts again; the container shows CrashLoopBackOff meanwhile, with
// kubelet's message. The restart is counted when it happens, as kubelet counts it.
func (r *podRunner) restartAfterBackoff(c *container, b *restartBackoff, finished time.Time) bool {
	if wait, delay := b.wait(finished, time.Now()); wait > 0 {
		p := r.currentPod()
		podName := fmt.Sprintf("%s_%s(%s)", p.Name, p.Namespace, p.UID) // kubelet's format.Pod
		c.mu.Lock()
		if c.state.Terminated != nil {
			c.lastState = corev1.ContainerState{Terminated: c.state.Terminated}
		}
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.spec.Name, podName),
		}}
		c.mu.Unlock()
		r.changed()
		r.event(corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.spec.Name, podName))
		if !r.pause(wait) {
			return false
		}
	}
	b.restarted(finished, time.Now())
	r.countRestart(c)
	return !r.deleting()
}

// pause waits d, or less when the Pod ends; it tells whether the Pod goes on.
func (r *podRunner) pause(d time.Duration) bool {
	select {
	case <-r.ctx.Done():
		return false
	case <-time.After(d):
	}
	return !r.deleting()
}

func (r *podRunner) countRestart(c *container) {
	c.mu.Lock()
	if c.state.Terminated != nil {
		c.lastState = corev1.ContainerState{Terminated: c.state.Terminated}
	}
	c.restartCount++
	c.mu.Unlock()
	r.changed()
}
