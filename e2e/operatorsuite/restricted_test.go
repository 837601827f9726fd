package operatorsuite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAClusterRunsUnderPodSecurityRestricted: the namespace enforces Pod Security
// "restricted" (the real API server's admission refuses any pod that does not comply). The
// cluster reaches Steady there, its servers really run as uid and gid 999 with a read-only
// root (the node agent honours the security context as a runtime does), and it fails over
// when its primary dies.
func TestAClusterRunsUnderPodSecurityRestricted(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 4*time.Minute)
	var nsObj corev1.Namespace
	if err := k.Get(ctx, client.ObjectKey{Name: ns}, &nsObj); err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	nsObj.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
	if err := k.Update(ctx, &nsObj); err != nil {
		t.Fatal(err)
	}
	// The admission is real: a root pod is refused.
	root := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := k.Create(ctx, root); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod that runs as root was not refused by Pod Security: %v", err)
	}

	startOperator(t, "")
	if err := k.Create(ctx, newCluster(ns, "rs", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "rs", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	for _, n := range vc.Status.Nodes {
		pid, err := cl.ContainerPID(ns, n.Pod, "valkey")
		if err != nil {
			t.Fatal(err)
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"Uid:", "Gid:"} {
			if !strings.Contains(string(status), fmt.Sprintf("%s\t%d\t%d", field, kube.ValkeyUID, kube.ValkeyUID)) {
				t.Fatalf("%s's server does not run as %d: %s", n.Pod, kube.ValkeyUID, firstLines(string(status), field))
			}
		}
		// Nothing outside the volumes is writable.
		if err := os.WriteFile(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), "tmp", "probe"), []byte("x"), 0o600); err == nil {
			t.Fatalf("%s's root file system is writable", n.Pod)
		}
	}
	c := writable(t, vc)
	if err := setAndWait(ctx, c, "restricted-", 50, 1); err != nil {
		t.Fatal(err)
	}
	old := vc.Status.Primary
	if err := cl.KillContainer(ns, old, "valkey"); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "rs", 90*time.Second, "failed over", func(vc *v1alpha1.ValkeyCluster) bool {
		done := false
		for _, h := range vc.Status.History {
			done = done || h.Event == "failover-complete"
		}
		return done && vc.Status.State == v1alpha1.StateSteady && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})
	c2 := writable(t, vc)
	for i := 0; i < 50; i++ {
		if v, err := c2.Do(ctx, c2.B().Get().Key(fmt.Sprintf("restricted-%d", i)).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("restricted-%d lost: %q, %v", i, v, err)
		}
	}
}

func firstLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
