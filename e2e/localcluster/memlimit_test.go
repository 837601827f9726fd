package localcluster_test

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// TestAContainerOverItsMemoryLimitIsOOMKilled: resources.limits.memory holds as a kubelet
// applies it. Of two containers limited to 32 MiB, the one that holds 64 MB (a shell reading
// it into a variable) is ended by the kernel's OOM killer, reported as terminated with reason
// OOMKilled and exit code 137, and restarted; the one that holds 4 MB runs on, and the kernel's
// figures for its group show the limit, a peak between what it holds and the limit, and no
// OOM kill.
func TestAContainerOverItsMemoryLimitIsOOMKilled(t *testing.T) {
	if !cl.MemoryLimitsEnforced() {
		t.Skip(localcluster.ErrNoMemoryController)
	}
	ns := cl.Namespace(t)
	const limit = 32 << 20
	limited := func(name string, bytes string) corev1.Container {
		c := sh(name, `x=$(head -c `+bytes+` /dev/zero | tr '\0' a); echo "holding ${#x} bytes"; exec sleep 3600`)
		c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(limit, resource.BinarySI)}
		return c
	}
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mem"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{limited("hog", "64000000"), limited("modest", "4000000")}},
	})
	status := func(p *corev1.Pod, name string) corev1.ContainerStatus {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == name {
				return s
			}
		}
		return corev1.ContainerStatus{}
	}
	p := waitPod(t, ns, "mem", time.Minute, "the hog OOMKilled and restarted", func(p *corev1.Pod) bool {
		last := status(p, "hog").LastTerminationState.Terminated
		return status(p, "hog").RestartCount >= 1 && last != nil && last.Reason == "OOMKilled" && last.ExitCode == 137
	})
	if modest := status(p, "modest"); modest.RestartCount != 0 || modest.State.Running == nil {
		t.Fatalf("the container within its limit: %+v", modest)
	}
	waitLog(t, ns, "mem", "modest", "holding 4000000 bytes", 30*time.Second)
	hog, err := cl.ContainerMemory(ns, "mem", "hog")
	if err != nil {
		t.Fatal(err)
	}
	if hog.OOMKills < 1 || hog.Limit != limit {
		t.Errorf("the hog's group: %+v; want its limit %d and an OOM kill", hog, limit)
	}
	modest, err := cl.ContainerMemory(ns, "mem", "modest")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kernel's figures: hog %+v, modest %+v", hog, modest)
	if modest.Limit != limit || modest.OOMKills != 0 || modest.Peak < 4000000 || modest.Peak >= limit {
		t.Errorf("the modest container's group: %+v; want limit %d, no OOM kill, a peak of at least 4000000 and under the limit", modest, limit)
	}
	if _, err := cl.ContainerMemory(ns, "mem", "none"); err == nil || errors.Is(err, localcluster.ErrNoMemoryController) {
		t.Errorf("a container the pod does not have: %v", err)
	}
}
