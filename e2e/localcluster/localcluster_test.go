package localcluster_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

var cl *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(localcluster.RunTests(m, "localcluster", localcluster.Options{Images: layoutProbeImages()}, &cl))
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// valkeyStatefulSet is a StatefulSet of Valkey pods as an operator would write it: bound to
// the Pod IP, data on a claim, an exec readiness probe, spread over hosts by a required
// anti-affinity rule.
func valkeyStatefulSet(ns, name string, replicas int32, aof bool) (*appsv1.StatefulSet, *corev1.Service) {
	labels := map[string]string{"app": name}
	args := []string{"--bind", "$(POD_IP)", "--port", "6379", "--dir", "/data", "--protected-mode", "no", "--save", ""}
	if aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  labels,
			Ports:     []corev1.ServicePort{{Name: "valkey", Port: 6379}},
		},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
							TopologyKey:   "kubernetes.io/hostname",
						}},
					}},
					Containers: []corev1.Container{{
						Name:  "valkey",
						Image: "valkey/valkey:8.0",
						Args:  args,
						Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"},
						}}},
						Ports:        []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
								Command: []string{"sh", "-c", `valkey-cli -h "$POD_IP" ping | grep -q PONG`},
							}},
							PeriodSeconds: 1,
						},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
		},
	}
	return sts, svc
}

func createValkeySet(t *testing.T, ns, name string, replicas int32, aof bool) []*corev1.Pod {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	sts, svc := valkeyStatefulSet(ns, name, replicas, aof)
	cs := cl.Clientset()
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, replicas)
	for i := range pods {
		p, err := cl.WaitPodReady(ctx, ns, fmt.Sprintf("%s-%d", name, i), 90*time.Second)
		if err != nil {
			t.Fatalf("%v (last seen: %s)", err, podSummary(p))
		}
		pods[i] = p
	}
	return pods
}

func podSummary(p *corev1.Pod) string {
	if p == nil {
		return "no pod"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s node=%s ip=%s", p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Message)
	}
	for _, c := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, " [%s ready=%v restarts=%d state=%+v]", c.Name, c.Ready, c.RestartCount, c.State)
	}
	return b.String()
}

func valkeyClient(t *testing.T, addr string) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, Dialer: net.Dialer{Timeout: 2 * time.Second}})
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestStatefulSetSpreadsOverNodesOnDistinctIPs(t *testing.T) {
	ns := cl.Namespace(t)
	pods := createValkeySet(t, ns, "vk", 3, false)
	ips, nodes := map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !ip.IsLoopback() {
			t.Fatalf("pod %s has IP %q, want a loopback address", p.Name, p.Status.PodIP)
		}
		ips[p.Status.PodIP], nodes[p.Spec.NodeName] = true, true
	}
	if len(ips) != 3 || len(nodes) != 3 {
		t.Fatalf("want 3 distinct IPs on 3 nodes, got IPs %v on nodes %v", ips, nodes)
	}
	claims, err := cl.Clientset().CoreV1().PersistentVolumeClaims(ns).List(ctxFor(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		if c.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim %s is %s, want Bound", c.Name, c.Status.Phase)
		}
	}
	if len(claims.Items) != 3 {
		t.Errorf("want 3 claims, got %d", len(claims.Items))
	}
}

func TestReplicaOfReplicatesAKey(t *testing.T) {
	ns := cl.Namespace(t)
	pods := createValkeySet(t, ns, "repl", 2, false)
	ctx := ctxFor(t, time.Minute)
	primary := valkeyClient(t, pods[0].Status.PodIP+":6379")
	replica := valkeyClient(t, pods[1].Status.PodIP+":6379")
	if err := replica.Do(ctx, replica.B().Replicaof().Host(pods[0].Status.PodIP).Port(6379).Build()).Error(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	if err := primary.Do(ctx, primary.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		v, err := replica.Do(ctx, replica.B().Get().Key("k").Build()).ToString()
		return err == nil && v == "v1", nil
	})
	if err != nil {
		info, _ := replica.Do(ctx, replica.B().Info().Section("replication").Build()).ToString()
		t.Fatalf("key not replicated: %v\n%s", err, info)
	}
}

func TestKilledContainerIsRestarted(t *testing.T) {
	ns := cl.Namespace(t)
	pods := createValkeySet(t, ns, "kill", 1, false)
	if err := cl.KillContainer(ns, pods[0].Name, "valkey"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, time.Minute)
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].Ready && cs[0].State.Running != nil &&
			cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.ExitCode == 137, nil
	})
	if err != nil {
		t.Fatalf("want restartCount 1, running and ready with last exit code 137: %v; got %s", err, podSummary(last))
	}
}

func TestDeletedPodKeepsItsClaimData(t *testing.T) {
	ns := cl.Namespace(t)
	pods := createValkeySet(t, ns, "aof", 1, true)
	ctx := ctxFor(t, 2*time.Minute)
	c := valkeyClient(t, pods[0].Status.PodIP+":6379")
	if err := c.Do(ctx, c.B().Set().Key("durable").Value("yes").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cl.DeletePod(ctx, ns, pods[0].Name); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		return err == nil && p.UID != pods[0].UID, nil
	})
	if err != nil {
		t.Fatalf("the StatefulSet did not re-create the pod: %v", err)
	}
	p, err := cl.WaitPodReady(ctx, ns, pods[0].Name, 60*time.Second)
	if err != nil {
		t.Fatalf("%v: %s", err, podSummary(p))
	}
	c2 := valkeyClient(t, p.Status.PodIP+":6379")
	v, err := c2.Do(ctx, c2.B().Get().Key("durable").Build()).ToString()
	if err != nil || v != "yes" {
		t.Fatalf("after re-creation GET durable = %q, %v; want \"yes\" from the AOF on the same claim", v, err)
	}
}

func TestPartitionBlocksTrafficUntilHealed(t *testing.T) {
	ns := cl.Namespace(t)
	pods := createValkeySet(t, ns, "part", 3, false)
	a, _ := netip.ParseAddr(pods[0].Status.PodIP)
	b, _ := netip.ParseAddr(pods[1].Status.PodIP)
	ctx := ctxFor(t, 2*time.Minute)
	// From inside pod a, as its own processes would: valkey-cli to b.
	ping := func(from *corev1.Pod, to string) error {
		out, err := cl.Exec(ctx, ns, from.Name, "valkey", "timeout", "2", "valkey-cli", "-h", to, "ping")
		if err != nil || !strings.Contains(string(out), "PONG") {
			return fmt.Errorf("ping %s from %s: %v: %s", to, from.Name, err, out)
		}
		return nil
	}
	if err := ping(pods[0], b.String()); err != nil {
		t.Fatalf("before the partition: %v", err)
	}
	if err := cl.Partition(a, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Heal() })
	if err := ping(pods[0], b.String()); err == nil {
		t.Fatalf("pod a still reaches pod b across the partition")
	}
	if err := ping(pods[1], a.String()); err == nil {
		t.Fatalf("pod b still reaches pod a across the partition")
	}
	if err := ping(pods[2], b.String()); err != nil {
		t.Fatalf("a third pod lost b too: %v", err)
	}
	if err := cl.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := ping(pods[0], b.String()); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}

func TestJobCompletesAndCronJobCreatesJobs(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	cs := cl.Clientset()
	podSpec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "work", Image: "busybox:1.36",
			Command:      []string{"sh", "-c", "echo done > /out/result && cat /out/result"},
			VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
		}},
		Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	job := &batchJob{ns: ns, name: "once", spec: podSpec}
	if err := job.create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		return job.succeeded(ctx, cs)
	})
	if err != nil {
		t.Fatalf("job did not complete: %v", err)
	}
	cron := &cronJob{ns: ns, name: "every-minute", spec: podSpec}
	if err := cron.create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	// The CronJob controller schedules on whole minutes: the first Job appears within one.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 75*time.Second, true, func(ctx context.Context) (bool, error) {
		return cron.hasJobs(ctx, cs)
	})
	if err != nil {
		t.Fatalf("the CronJob created no Job: %v", err)
	}
}

func TestServiceReachesOnlyReadyPods(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	cs := cl.Clientset()
	pods := createValkeySet(t, ns, "svc", 1, false)
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "svc"},
			Ports:    []corev1.ServicePort{{Port: 6379, TargetPort: intstr.FromString("valkey")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.IsLoopback() {
		t.Fatalf("ClusterIP %q is not a loopback address", svc.Spec.ClusterIP)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "6379")
	pingVia := func() error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := conn.Read(buf)
		if err != nil {
			return err
		}
		if string(buf[:n]) != "+PONG\r\n" {
			return fmt.Errorf("unexpected reply %q", buf[:n])
		}
		return nil
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return pingVia() == nil, nil
	})
	if err != nil {
		t.Fatalf("the ClusterIP %s never reached the ready pod: %v", addr, pingVia())
	}
	// Freeze the pod: its readiness probe fails, the Pod turns not Ready, and the Service
	// stops sending new connections to it.
	if err := cl.PauseContainer(ns, pods[0].Name, "valkey"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.ResumeContainer(ns, pods[0].Name, "valkey") })
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		return err == nil && !podReady(p), nil
	})
	if err != nil {
		t.Fatalf("a frozen pod stayed Ready: %v", err)
	}
	if err := cl.ResumeContainer(ns, pods[0].Name, "valkey"); err != nil {
		t.Fatal(err)
	}
	// Resumed, the pod answers again but stays not Ready until its probe passes: in that
	// window the proxy must not send it traffic. Check right away, then wait for Ready.
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{}); err == nil && !podReady(p) {
		if err := pingVia(); err == nil {
			t.Fatalf("the Service reached a pod that is not Ready")
		}
	}
	if _, err := cl.WaitPodReady(ctx, ns, pods[0].Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return pingVia() == nil, nil
	})
	if err != nil {
		t.Fatalf("the Service did not reach the pod once Ready again: %v", pingVia())
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestServiceAccountRBACIsEnforcedForPods(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	cs := cl.Clientset()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmap-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The container talks to the API server exactly as in-cluster clients do: the token and
	// CA from the standard path, the address from KUBERNETES_SERVICE_HOST/PORT.
	script := `set -e
sa=/var/run/secrets/kubernetes.io/serviceaccount
api="https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/api/v1/namespaces/$(cat $sa/namespace)"
get() { curl -s -o /dev/null -w '%{http_code}' --cacert $sa/ca.crt -H "Authorization: Bearer $(cat $sa/token)" "$api/$1"; }
echo "configmaps=$(get configmaps) secrets=$(get secrets)"
sleep 3600`
	_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{
			ServiceAccountName:            "reader",
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "client", Image: "busybox:1.36", Command: []string{"sh", "-c", script},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		path, err := cl.LogPath(ns, "client", "client")
		if err != nil {
			return false, nil
		}
		data, _ := os.ReadFile(path)
		out = string(data)
		return strings.Contains(out, "secrets="), nil
	})
	if err != nil {
		t.Fatalf("the pod printed no result: %v (output so far %q)", err, out)
	}
	if !strings.Contains(out, "configmaps=200 secrets=403") {
		t.Fatalf("want configmaps=200 secrets=403 from inside the pod, got %q", strings.TrimSpace(out))
	}
}

func TestStopLeavesNothingBehind(t *testing.T) {
	if cl == nil {
		t.Skip(localcluster.ErrNotRoot.Error())
	}
	ctx := ctxFor(t, 3*time.Minute)
	// A second cluster beside the shared one: isolation in action.
	other, err := localcluster.Start(ctx, localcluster.Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = other.Stop()
		}
	})
	dir := other.Dir()
	cs := other.Clientset()
	_, err = cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "valkey", Image: "valkey/valkey:8.0",
			Args: []string{"--bind", "$(POD_IP)", "--port", "6379", "--save", ""},
			Env:  []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.WaitPodReady(ctx, "default", "sleeper", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	ip, _ := other.PodIP("default", "sleeper")
	if err := other.Partition(ip, netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if before := localcluster.Leftovers(dir); len(before) == 0 {
		t.Fatalf("found nothing of a running cluster: the leftover check is blind")
	}
	stopped = true
	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := localcluster.Leftovers(dir); len(left) > 0 {
		t.Fatalf("after Stop these are left: %v", left)
	}
	_, err = cl.Clientset().CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("stopping one cluster disturbed the other: %v", err)
	}
}

// valkeyClientNoFail connects and pings, returning nil when nothing answers.
func valkeyClientNoFail(addr string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c.Do(ctx, c.B().Ping().Build()).Error() != nil {
		c.Close()
		return nil
	}
	return c
}

func TestDemoSampleBecomesReady(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	objs, err := cl.ApplyFile(ctx, "testdata/valkey-statefulset.yaml", ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 3 {
		t.Fatalf("applied %d objects, want 3 (two Services and a StatefulSet)", len(objs))
	}
	for i := 0; i < 3; i++ {
		if p, err := cl.WaitPodReady(ctx, ns, fmt.Sprintf("demo-%d", i), 90*time.Second); err != nil {
			t.Fatalf("%v: %s", err, podSummary(p))
		}
	}
	svc, err := cl.Clientset().CoreV1().Services(ns).Get(ctx, "demo-client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := valkeyClient(t, net.JoinHostPort(svc.Spec.ClusterIP, "6379"))
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.Do(ctx, c.B().Ping().Build()).Error() == nil, nil
	})
	if err != nil {
		t.Fatalf("the sample's client Service does not answer: %v", err)
	}
}
