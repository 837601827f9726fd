package localcluster_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// waitPod polls a Pod until cond holds, failing the test with the Pod's last state.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx := ctxFor(t, timeout+5*time.Second)
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("%s: %v; last seen %s", what, err, podSummary(last))
	}
	return last
}

func createPod(t *testing.T, ns string, pod *corev1.Pod) {
	t.Helper()
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1))
	}
	if _, err := cl.Clientset().CoreV1().Pods(ns).Create(ctxFor(t, 10*time.Second), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func logOf(t *testing.T, ns, pod, container string) string {
	t.Helper()
	p, err := cl.LogPath(ns, pod, container)
	if err != nil {
		return ""
	}
	data, _ := os.ReadFile(p)
	return string(data)
}

func waitLog(t *testing.T, ns, pod, container, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(logOf(t, ns, pod, container), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s never printed %q; output: %q", pod, container, want, logOf(t, ns, pod, container))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sh(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.36", Command: []string{"sh", "-c", script}}
}

func TestReCreatedPodGetsANewIPWhenAsked(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, time.Minute)
	pods := createValkeySet(t, ns, "ips", 1, false)
	first := pods[0].Status.PodIP
	recreate := func() string {
		old, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, "ips-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.DeletePod(ctx, ns, "ips-0"); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, ns, "ips-0", 60*time.Second, "re-created and ready", func(p *corev1.Pod) bool {
			return p.UID != old.UID && podReady(p)
		})
		return p.Status.PodIP
	}
	if ip := recreate(); ip != first {
		t.Fatalf("with stable IPs the re-created pod moved from %s to %s", first, ip)
	}
	cl.SetNewIPOnRecreate(true)
	t.Cleanup(func() { cl.SetNewIPOnRecreate(false) })
	second := recreate()
	if second == first {
		t.Fatalf("with new IPs on re-creation the pod kept %s", first)
	}
	third := recreate()
	if third == second || third == first {
		t.Fatalf("third incarnation got %s, earlier ones had %s and %s", third, first, second)
	}
}

func TestConfigMapAndSecretVolumesFollowChanges(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, time.Minute)
	cs := cl.Clientset()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"valkey.conf": "maxmemory 1mb\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "auth"}, Data: map[string][]byte{"password": []byte("one")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Secret is mounted inside the ConfigMap's volume, as the operator's pods mount theirs:
	// a change of the ConfigMap must not take the nested mount away (it did: the refresh removed
	// the mountpoint directory, and the files vanished under the running process).
	c := sh("reader", `while true; do echo "conf=$(cat /etc/valkey/valkey.conf) pass=$(cat /etc/valkey/auth/password)"; sleep 0.2; done`)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/valkey"}, {Name: "auth", MountPath: "/etc/valkey/auth", ReadOnly: true}}
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: []corev1.Volume{
			{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
			{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "auth"}}},
		}},
	})
	waitLog(t, ns, "reader", "reader", "conf=maxmemory 1mb pass=one", 30*time.Second)
	// The pod sees its ConfigMap at /etc/valkey; the host's own file there (Debian's valkey
	// package ships one) must stay untouched.
	if data, err := os.ReadFile("/etc/valkey/valkey.conf"); err == nil && strings.HasPrefix(string(data), "maxmemory 1mb") {
		t.Fatalf("the pod's /etc/valkey/valkey.conf replaced the host's")
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "conf"}, Data: map[string]string{"valkey.conf": "maxmemory 2mb\n"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "auth"}, Data: map[string][]byte{"password": []byte("two")},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, ns, "reader", "reader", "conf=maxmemory 2mb pass=two", 30*time.Second)
	p := waitPod(t, ns, "reader", 5*time.Second, "running", func(p *corev1.Pod) bool { return len(p.Status.ContainerStatuses) == 1 })
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Fatalf("the update restarted the container %d times; volumes must change in place", n)
	}
}

func TestProbesGateReadinessAndRestartOnLivenessFailure(t *testing.T) {
	ns := cl.Namespace(t)
	c := corev1.Container{
		Name: "web", Image: "busybox:1.36",
		Command: []string{"python3", "-m", "http.server", "--bind", "$(POD_IP)", "8080"},
		Env:     []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		StartupProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
			PeriodSeconds: 1, FailureThreshold: 30,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		},
		// Healthy while /tmp/broken does not exist; /tmp is the container's own (its overlay),
		// so a restart heals it.
		LivenessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "test ! -e /tmp/broken"}}},
			PeriodSeconds: 1, FailureThreshold: 2,
		},
	}
	createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	waitPod(t, ns, "web", 30*time.Second, "ready through its HTTP probe", podReady)
	if _, err := cl.Exec(ctxFor(t, 5*time.Second), ns, "web", "web", "touch", "/tmp/broken"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/tmp/broken"); err == nil {
		t.Fatalf("the container's /tmp/broken appeared on the host")
	}
	p := waitPod(t, ns, "web", 30*time.Second, "restarted by the liveness probe and ready again", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && podReady(p)
	})
	if lt := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil {
		t.Fatalf("no last termination state after a liveness restart: %s", podSummary(p))
	}
}

func TestInitContainersRunInOrderBeforeTheMainContainer(t *testing.T) {
	ns := cl.Namespace(t)
	first := sh("first", "sleep 0.3; echo first >> /work/order")
	second := sh("second", "echo second >> /work/order")
	main := sh("main", "cat /work/order; sleep 3600")
	for _, c := range []*corev1.Container{&first, &second, &main} {
		c.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	}
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "init"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{first, second},
			Containers:     []corev1.Container{main},
			Volumes:        []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	p := waitPod(t, ns, "init", 30*time.Second, "initialized and running", podReady)
	waitLog(t, ns, "init", "main", "first\nsecond\n", 10*time.Second)
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			t.Errorf("init container %s: want terminated with exit code 0, got %+v", s.Name, s.State)
		}
	}
}

func TestDeletionSendsSIGTERMThenSIGKILLAfterTheGracePeriod(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, time.Minute)
	// Each says "armed" once its trap is set: a SIGTERM before that would end the shell at
	// once, whatever the test meant (Ready comes as soon as the process runs).
	stubborn := sh("stubborn", `trap 'echo got TERM' TERM; echo armed; while true; do sleep 0.1; done`)
	polite := sh("polite", `trap 'echo bye; exit 0' TERM; echo armed; while true; do sleep 0.1; done`)
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stubborn"},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(int64(2)), Containers: []corev1.Container{stubborn}},
	})
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "polite"},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(int64(30)), Containers: []corev1.Container{polite}},
	})
	waitPod(t, ns, "stubborn", 20*time.Second, "ready", podReady)
	waitPod(t, ns, "polite", 20*time.Second, "ready", podReady)
	waitLog(t, ns, "stubborn", "stubborn", "armed\n", 10*time.Second)
	waitLog(t, ns, "polite", "polite", "armed\n", 10*time.Second)
	gone := func(name string) time.Duration {
		start := time.Now()
		if err := cl.DeletePod(ctx, ns, name); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return err != nil, nil
		})
		if err != nil {
			t.Fatalf("pod %s not gone: %v", name, err)
		}
		return time.Since(start)
	}
	if d := gone("stubborn"); d < 2*time.Second || d > 10*time.Second {
		t.Errorf("a pod ignoring SIGTERM with a 2s grace period went in %s; want about 2s", d)
	}
	if d := gone("polite"); d > 5*time.Second {
		t.Errorf("a pod that exits on SIGTERM took %s to go despite a 30s grace period", d)
	}
}

func TestStoppedNodeTakesItsPodsDownUntilStarted(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	pods := createValkeySet(t, ns, "node", 1, false)
	nodeName := pods[0].Spec.NodeName
	if err := cl.StopNode(ctx, nodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), nodeName) })
	waitPod(t, ns, "node-0", 10*time.Second, "not ready on a stopped node", func(p *corev1.Pod) bool { return !podReady(p) })
	n, err := cl.Clientset().CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			t.Fatalf("stopped node %s still reports Ready", nodeName)
		}
	}
	if c := valkeyClientNoFail(pods[0].Status.PodIP + ":6379"); c == nil {
		// expected: nothing answers on a stopped node
	} else {
		c.Close()
		t.Fatalf("valkey on a stopped node still accepts connections")
	}
	if err := cl.StartNode(ctx, nodeName); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "node-0", 30*time.Second, "running again after the node started", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return podReady(p) && len(cs) == 1 && cs[0].RestartCount == 1
	})
}

func TestWipedVolumesRestartEmpty(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, time.Minute)
	pods := createValkeySet(t, ns, "wipe", 1, true)
	c := valkeyClient(t, pods[0].Status.PodIP+":6379")
	if err := c.Do(ctx, c.B().Set().Key("k").Value("v").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := cl.WipeVolumes(ctx, ns, "wipe-0"); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "wipe-0", 30*time.Second, "restarted after the wipe", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return podReady(p) && len(cs) == 1 && cs[0].RestartCount == 1
	})
	c2 := valkeyClient(t, pods[0].Status.PodIP+":6379")
	n, err := c2.Do(ctx, c2.B().Dbsize().Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("after the wipe DBSIZE = %d, %v; want an empty server", n, err)
	}
}

// A failed container's last output becomes its termination message with the policy
// FallbackToLogsOnError, as kubelet does; without the policy there is none.
func TestFailedContainersLogsBecomeItsTerminationMessage(t *testing.T) {
	ns := cl.Namespace(t)
	fails := sh("fails", `echo starting; echo "*** FATAL CONFIG FILE ERROR ***"; echo "'maxmemory lots'"; exit 1`)
	fails.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	silent := sh("silent", `echo nothing to see; exit 1`)
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{fails, silent}},
	})
	p := waitPod(t, ns, "crash", 30*time.Second, "both containers terminated", func(p *corev1.Pod) bool {
		done := 0
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				done++
			}
		}
		return done == 2
	})
	for _, cs := range p.Status.ContainerStatuses {
		msg := cs.State.Terminated.Message
		switch cs.Name {
		case "fails":
			if !strings.Contains(msg, "FATAL CONFIG FILE ERROR") || !strings.Contains(msg, "'maxmemory lots'") {
				t.Fatalf("termination message %q lacks the container's last output", msg)
			}
		case "silent":
			if msg != "" {
				t.Fatalf("a container without FallbackToLogsOnError got message %q", msg)
			}
		}
	}
}

// A container's environment is resolved once, when it starts, as kubelet does: a Secret or
// ConfigMap changed later reaches neither the running process nor its exec probes nor
// kubectl exec; a restart resolves it again. (The node agent used to read the Secret again on
// every exec, which hid probes that break when a password in env is rotated.)
func TestEnvIsResolvedWhenTheContainerStarts(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	cs := cl.Clientset()
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Data: map[string][]byte{"password": []byte("one")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "first"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := sh("app", `echo "started with $PASS $MODE $CM_mode $S_password"; exec sleep 3600`)
	c.Env = []corev1.EnvVar{
		{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pass"}, Key: "password"}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
	}
	c.EnvFrom = []corev1.EnvFromSource{
		{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
		{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "pass"}}},
	}
	// Ready while the probe's environment holds the first values.
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", `test "$PASS $MODE $CM_mode $S_password" = "one first first one"`}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}})
	waitPod(t, ns, "app", 30*time.Second, "ready", podReady)
	waitLog(t, ns, "app", "app", "started with one first first one", 5*time.Second)

	if _, err := cs.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pass"}, Data: map[string][]byte{"password": []byte("two")},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "second"},
	}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const script = `echo "$PASS $MODE $CM_mode $S_password"`
	// The probe keeps passing: it runs with the environment of the container's start.
	for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !podReady(p) {
			t.Fatalf("the pod went NotReady after the Secret changed: its exec probe saw the new values; %s", podSummary(p))
		}
	}
	if out, err := cl.Exec(ctx, ns, "app", "app", "sh", "-c", script); err != nil || string(out) != "one first first one\n" {
		t.Fatalf("exec after the change printed %q, %v; want the values the container started with", out, err)
	}
	if out, err := kubectl(ctx, t, nil, "", "-n", ns, "exec", "app", "--", "sh", "-c", script); err != nil || out != "one first first one\n" {
		t.Fatalf("kubectl exec after the change printed %q, %v; want the values the container started with", out, err)
	}

	// A restart resolves the environment again: the probe now sees the new values and fails.
	if err := cl.KillContainer(ns, "app", "app"); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "app", 60*time.Second, "restarted and not ready", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil && !podReady(p)
	})
	waitLog(t, ns, "app", "app", "started with two second second two", 5*time.Second)
	if out, err := cl.Exec(ctx, ns, "app", "app", "sh", "-c", script); err != nil || string(out) != "two second second two\n" {
		t.Fatalf("exec after the restart printed %q, %v; want the new values", out, err)
	}
	if out, err := kubectl(ctx, t, nil, "", "-n", ns, "exec", "app", "--", "sh", "-c", script); err != nil || out != "two second second two\n" {
		t.Fatalf("kubectl exec after the restart printed %q, %v; want the new values", out, err)
	}
	time.Sleep(2 * time.Second)
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{}); err != nil || podReady(p) {
		t.Fatalf("after the restart the probe still passed (%v): it must see the new values; %s", err, podSummary(p))
	}
}
