package localcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// An image no registry can serve is not run: the container waits with ErrImagePull (the
// runtime's error) and then ImagePullBackOff, as kubelet reports it, with the pull's events.
func TestAnImageThatCannotBePulledWaits(t *testing.T) {
	ns := cl.Namespace(t)
	const image = "registry.invalid/x:0"
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nopull"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image, Command: []string{"sleep", "60"}}}},
	})
	seen := map[string]string{}
	waitPod(t, ns, "nopull", 30*time.Second, "ErrImagePull, then ImagePullBackOff", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				t.Fatalf("the container ran: %+v", cs.State)
			}
			if w := cs.State.Waiting; w != nil {
				seen[w.Reason] = w.Message
			}
		}
		_, backoff := seen["ImagePullBackOff"]
		return backoff
	})
	if msg, ok := seen["ErrImagePull"]; !ok || !strings.Contains(msg, "no such host") || !strings.Contains(msg, image) {
		t.Errorf("ErrImagePull: %q (seen %v)", msg, ok)
	}
	if msg := seen["ImagePullBackOff"]; msg != `Back-off pulling image "`+image+`"` {
		t.Errorf("ImagePullBackOff says %q", msg)
	}
	waitPodEvent(t, ns, "nopull", "Failed", `Failed to pull image "`+image+`"`)
	waitPodEvent(t, ns, "nopull", "BackOff", `Back-off pulling image "`+image+`"`)
}

// A crash-looping container restarts at once after its first exit, then only kubelet's
// back-off (10 s, then 20 s) after each exit, waiting CrashLoopBackOff with kubelet's message.
func TestACrashLoopBacksOffAsKubeletDoes(t *testing.T) {
	ns := cl.Namespace(t)
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "loop"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{sh("c", "exit 3")}},
	})
	var uid string
	backOff := func(restarts int32, delay string) *corev1.Pod {
		return waitPod(t, ns, "loop", 40*time.Second, fmt.Sprintf("CrashLoopBackOff of %s after %d restarts", delay, restarts), func(p *corev1.Pod) bool {
			uid = string(p.UID)
			cs := p.Status.ContainerStatuses
			if len(cs) != 1 {
				return false
			}
			if cs[0].RestartCount > restarts {
				t.Fatalf("restarted more than %d times before the %s back-off: %s", restarts, delay, podSummary(p))
			}
			w := cs[0].State.Waiting
			return cs[0].RestartCount == restarts && w != nil && w.Reason == "CrashLoopBackOff" &&
				w.Message == "back-off "+delay+" restarting failed container=c pod=loop_"+ns+"("+uid+")"
		})
	}
	p := backOff(1, "10s")
	last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last == nil || last.ExitCode != 3 {
		t.Fatalf("last state %+v, want exit code 3", last)
	}
	// The third run starts no sooner than 10 s after the second exited.
	p = backOff(2, "20s")
	third := p.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if gap := third.StartedAt.Sub(last.FinishedAt.Time); gap < 9*time.Second { // the API's times are whole seconds
		t.Fatalf("the third run started %s after the second exited, want 10s", gap)
	}
	waitPodEvent(t, ns, "loop", "BackOff", "Back-off restarting failed container c in pod loop_"+ns+"("+uid+")")
}

// waitPodEvent waits for an Event of the Pod with the reason and a message containing want.
func waitPodEvent(t *testing.T, ns, pod, reason, want string) {
	t.Helper()
	ctx := ctxFor(t, 20*time.Second)
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cl.Clientset().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return false, nil
		}
		got = got[:0]
		for _, e := range evs.Items {
			got = append(got, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, want) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event saying %q for %s: %v", reason, want, pod, got)
	}
}
