package operatorsuite

import (
	"context"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
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
	names := kube.NamesOf(valkeyapi.HubOf(vc))
	pods := podRestarts(t, ctx, ns, vc)
	oldOp := secretKey(t, vc, kube.KeyOperatorPassword)

	vc.Annotations = map[string]string{v1beta1.AnnotationRotatePasswords: "all@" + time.Now().UTC().Format(time.RFC3339Nano)}
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

// The probe's password lost from the auth Secret, with an operator process that does not
// remember it (as after an upgrade from an operator that had none): a new one is made (it opens
// PING only, so nothing is locked out), given to the running nodes live, and the pods' probes
// read it from their volume: every pod Ready again without a restart, the old probe password
// refused.
func TestALostProbePasswordIsMadeAgainForTheRunningPods(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "lostprobe", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "lostprobe", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	pods := podRestarts(t, ctx, ns, vc)
	old := secretKey(t, vc, kube.KeyProbePassword)
	if old == "" {
		t.Fatalf("the auth Secret has no %s", kube.KeyProbePassword)
	}
	for _, n := range vc.Status.Nodes {
		c, err := userClient(n.IP, "probe", old)
		if err != nil {
			t.Fatalf("%s: the probe's user: %v", n.Pod, err)
		}
		c.Close()
	}
	op.stop(t)
	startOperator(t, "")
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Auth}, &s); err != nil {
		t.Fatal(err)
	}
	delete(s.Data, kube.KeyProbePassword)
	if err := k.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	var made string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if made = secretKey(t, vc, kube.KeyProbePassword); made != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new probe password within 30 s")
		}
	}
	if made == old {
		t.Fatal("an operator that remembers nothing put the old probe password back")
	}
	var last error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		last = nil
		for _, n := range vc.Status.Nodes {
			if c, err := userClient(n.IP, "probe", made); err != nil {
				last = fmt.Errorf("%s: the new probe password: %w", n.Pod, err)
			} else {
				c.Close()
			}
			if c, err := userClient(n.IP, "probe", old); err == nil {
				c.Close()
				last = fmt.Errorf("%s: the old probe password still works", n.Pod)
			}
		}
		if last == nil {
			last = allPodsReady(ctx, ns, vc)
		}
		if last == nil || time.Now().After(deadline) {
			break
		}
	}
	if last != nil {
		t.Fatalf("30 s after the probe password was made again: %v", last)
	}
	// The volumes carry the new password by now: the pods stay Ready.
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := allPodsReady(ctx, ns, vc); err != nil {
			t.Fatal(err)
		}
	}
	if got := podRestarts(t, ctx, ns, vc); fmt.Sprint(got) != fmt.Sprint(pods) {
		t.Errorf("pods re-created or restarted: %v, were %v", got, pods)
	}
}
