package localcluster_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// localhostValkeyPod runs a Valkey server that listens on the Pod's 127.0.0.1 only, ready
// once a valkey-cli in the Pod (no -h: localhost) gets an answer.
func localhostValkeyPod(name string, port int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{
				Name:  "valkey",
				Image: "valkey/valkey:8.0",
				Args:  []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", ""},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
						Command: []string{"sh", "-c", "valkey-cli -p " + strconv.Itoa(port) + " ping | grep -q PONG"},
					}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// Each Pod has a network namespace of its own: two Pods listen on 127.0.0.1 at the same port
// without a clash, kubectl exec'd valkey-cli without -h reaches its own Pod's server, and
// neither a Pod nor the host reaches another Pod's localhost listener by the Pod's IP.
func TestPodsHaveTheirOwnLocalhost(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	for _, name := range []string{"a", "b"} {
		createPod(t, ns, localhostValkeyPod(name, 6379))
	}
	ips := map[string]string{}
	for _, name := range []string{"a", "b"} {
		p, err := cl.WaitPodReady(ctx, ns, name, 60*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		ips[name] = p.Status.PodIP
	}
	exec := func(pod string, args ...string) (string, error) {
		return kubectl(ctx, t, nil, "", append([]string{"-n", ns, "exec", pod, "--"}, args...)...)
	}
	if out, err := exec("a", "valkey-cli", "set", "who", "a"); err != nil || out != "OK\n" {
		t.Fatalf("exec a valkey-cli set = %q, %v", out, err)
	}
	if out, err := exec("a", "valkey-cli", "get", "who"); err != nil || out != "a\n" {
		t.Fatalf("exec a valkey-cli get = %q, %v; want a's own server", out, err)
	}
	if out, err := exec("b", "valkey-cli", "get", "who"); err != nil || out != "\n" {
		t.Fatalf("exec b valkey-cli get = %q, %v; want b's own, empty server", out, err)
	}
	// valkey-cli prints a refused connection and exits 0 in one-shot mode on some
	// versions: the answer, not the exit code, tells.
	if out, _ := exec("b", "valkey-cli", "-h", ips["a"], "ping"); strings.Contains(out, "PONG") {
		t.Fatalf("pod b reached a's localhost-only server at a's address %s: %q", ips["a"], out)
	}
	if c := valkeyClientNoFail(ips["a"] + ":6379"); c != nil {
		c.Close()
		t.Fatalf("the host reached a's localhost-only server at a's address %s", ips["a"])
	}
}
