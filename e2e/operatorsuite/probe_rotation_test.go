package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Every password the operator manages, the operator's own included, is rotated and the old ones
// retired at once (the user's retire request right after the new ones are published), on pods
// that started before the rotation: a kubelet resolves a container's env when it starts, so a
// readiness probe that authenticated with a password from env would keep the old one and get
// WRONGPASS once it is retired. Every pod must stay Ready (checked for 15 s after the rotation
// completed), the PodDisruptionBudget count every pod healthy, the client Service (which
// forwards only to Ready pods) still reach the primary, and no pod restart.
func TestPodsStayReadyAfterTheOperatorPasswordIsRotated(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "probed", 5*time.Minute)
	names := kube.NamesOf(vc)
	pods := podRestarts(t, ctx, ns, vc)
	oldOp := secretKey(t, vc, kube.KeyOperatorPassword)

	vc.Annotations = map[string]string{v1alpha1.AnnotationRotatePasswords: "all@" + time.Now().UTC().Format(time.RFC3339Nano)}
	update(t, ctx, vc)
	rotationPhase(t, ns, "probed", machine.RotationPublished)
	retireNow(t, ctx, ns, "probed")
	vc = rotated(t, ns, "probed", "all@")
	if secretKey(t, vc, kube.KeyOperatorPassword) == oldOp {
		t.Fatal("the operator's password was not rotated")
	}
	for _, n := range vc.Status.Nodes {
		if c, err := userClient(n.IP, "operator", oldOp); err == nil {
			c.Close()
			t.Fatalf("%s: the old operator password still works after the rotation completed", n.Pod)
		}
	}

	// The probes run every 2 s and fail after 3 failures: 15 s is two and a half windows.
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := allPodsReady(ctx, ns, vc); err != nil {
			t.Fatalf("after the rotation completed: %v\n%s", err, summary(get(t, ns, "probed")))
		}
	}
	var pdb policyv1.PodDisruptionBudget
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.PDB}, &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.CurrentHealthy != 3 {
		t.Errorf("the PodDisruptionBudget counts %d healthy pods of 3 after the rotation", pdb.Status.CurrentHealthy)
	}
	c := appClient(t, clientServiceAddr(t, vc), password(t, vc))
	if err := c.Do(ctx, c.B().Set().Key("after-rotation").Value("1").Build()).Error(); err != nil {
		t.Errorf("a write through the client Service after the rotation: %v", err)
	}
	if got := podRestarts(t, ctx, ns, vc); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods re-created or restarted: %v, were %v", got, pods)
	}
}

// allPodsReady checks that every pod of the cluster has the Ready condition. (The local cluster
// keeps no EndpointSlices: its service proxy forwards to the Ready pods a Service selects, found
// from the Pods, so the condition is what Services, the PodDisruptionBudget and the rolls go by.)
func allPodsReady(ctx context.Context, ns string, vc *v1alpha1.ValkeyCluster) error {
	var notReady []string
	for _, n := range vc.Status.Nodes {
		var p corev1.Pod
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Pod}, &p); err != nil {
			return err
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if !ready {
			notReady = append(notReady, n.Pod)
		}
	}
	if len(notReady) > 0 {
		return fmt.Errorf("pods not Ready: %s", strings.Join(notReady, ", "))
	}
	return nil
}
