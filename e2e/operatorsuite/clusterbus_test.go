package operatorsuite

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A Cluster topology with spec.networkPolicy unset: a pod that is not the cluster's, running a
// Valkey node of its own in cluster mode, can neither reach a node's cluster bus (the
// connection is refused) nor join the cluster by CLUSTER MEET (no node ever lists it), while
// it still reaches the client port (PONG) and the cluster's own nodes keep their bus
// (valkey-cli --cluster check finds every slot covered and every node agreeing). The policy is
// enforced by the local cluster's node agent (nftables, as a network plugin does).
func TestAPodThatIsNotTheClustersCannotMeetItsBus(t *testing.T) {
	ns, ctx, vc := steadyShards(t, "bus", 3, 1, "", 5*time.Minute)
	intruder := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "intruder", Labels: map[string]string{"role": "app"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "cli", Image: "valkey/valkey:8.0",
				Args:         []string{"--bind", "$(POD_IP)", "--port", "6379", "--save", "", "--cluster-enabled", "yes", "--dir", "/data"},
				Env:          []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if err := k.Create(ctx, intruder); err != nil {
		t.Fatal(err)
	}
	pod, err := cl.WaitPodReady(ctx, ns, "intruder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.WaitNetworkPolicies(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			rules, err := cl.NetworkPolicyRules()
			t.Logf("NetworkPolicy rules (%v):\n%s", err, rules)
		}
	})
	exec := func(args ...string) string {
		b, err := cl.Exec(ctx, ns, "intruder", "cli", append([]string{"timeout", "5", "valkey-cli", "--no-auth-warning"}, args...)...)
		return fmt.Sprintf("%s (%v)", strings.TrimSpace(string(b)), err)
	}
	pass := password(t, vc)
	for _, n := range vc.Status.Nodes {
		if out := exec("-h", n.IP, "-p", "16379", "ping"); !strings.Contains(out, "Connection refused") {
			t.Errorf("the bus of %s (%s:16379) is not refused to a pod that is not the cluster's: %s", n.Pod, n.IP, out)
		}
		if out := exec("-h", n.IP, "-p", "6379", "-a", pass, "ping"); !strings.Contains(out, "PONG") {
			t.Errorf("the client port of %s is closed to the application's pod: %s", n.Pod, out)
		}
		if out := exec("-h", pod.Status.PodIP, "cluster", "meet", n.IP, "6379"); !strings.Contains(out, "OK") {
			t.Fatalf("the intruder's own node does not take CLUSTER MEET %s: %s", n.IP, out)
		}
	}
	// A MEET that got through makes the sender a node the receiver lists at once (in
	// handshake, then as a primary without slots, under its own ID): watch every node for a
	// while, as the operator could forget it again. The receiver records the sender at the
	// source address of the connection, so the intruder is looked for by its ID and by a line
	// more than the cluster's nodes, not by its address.
	out := exec("-h", pod.Status.PodIP, "cluster", "myid")
	id, _, _ := strings.Cut(out, " ")
	if len(id) != 40 {
		t.Fatalf("the intruder's node ID: %s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, n := range vc.Status.Nodes {
			c := operatorClient(t, vc, n.IP)
			nodes, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
			c.Close()
			if err != nil {
				t.Fatalf("CLUSTER NODES on %s: %v", n.Pod, err)
			}
			if strings.Contains(nodes, id) || len(strings.Split(strings.TrimSpace(nodes), "\n")) > len(vc.Status.Nodes) {
				t.Fatalf("%s lists the intruder (%s, %s) after its CLUSTER MEET:\n%s", n.Pod, pod.Status.PodIP, id, nodes)
			}
		}
	}
	clusterCheck(t, get(t, ns, "bus"), vc.Status.Nodes[0].IP)
}
