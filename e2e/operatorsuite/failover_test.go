package operatorsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// TestPrimaryNodeLostFailsOverWithoutLosingWAITedWrites stops the node under the primary
// (its process dies, its pod stops answering): the operator promotes a replica, moves the
// client Service, and every write that WAIT confirmed on a replica is still there. The
// journal the operator wrote meanwhile replays through the machine: every decision, the
// failover's included, is taken again the same.
func TestPrimaryNodeLostFailsOverWithoutLosingWAITedWrites(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "fo", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "fo", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	c := writable(t, vc)
	const n = 200
	if err := setAndWait(ctx, c, "acked-", n, 1); err != nil {
		t.Fatal(err)
	}
	oldPrimary := vc.Status.Primary
	pod, err := cl.Clientset().CoreV1().Pods(ns).Get(ctx, oldPrimary, metav1GetOptions())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cl.StopNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	// Status tells the truth while it happens: Ready is computed from what is observed, so it
	// goes False, naming the old primary, before the machine has even left Steady.
	notReady := waitFor(t, ns, "fo", 30*time.Second, "Ready=False naming the lost primary", func(vc *v1alpha1.ValkeyCluster) bool {
		r := meta.FindStatusCondition(vc.Status.Conditions, v1beta1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && strings.Contains(r.Message, oldPrimary)
	})
	r := meta.FindStatusCondition(notReady.Status.Conditions, v1beta1.ConditionReady)
	t.Logf("while failing over (state %s): Ready=False %s: %s", notReady.Status.State, r.Reason, r.Message)
	vc = waitFor(t, ns, "fo", 90*time.Second, "a new primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary != "" && vc.Status.Primary != oldPrimary
	})
	c2 := writable(t, vc)
	t.Logf("failover: new primary %s, writable %s after the node stopped", vc.Status.Primary, time.Since(start).Round(10*time.Millisecond))
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("acked-%d", i)
		if v, err := c2.Do(ctx, c2.B().Get().Key(key).Build()).ToString(); err != nil || v != "v" {
			t.Fatalf("WAIT-acknowledged %s lost after failover: %q, %v\n%s", key, v, err, summary(vc))
		}
	}
	sawFailover := false
	for _, h := range vc.Status.History {
		sawFailover = sawFailover || h.To == v1alpha1.StateFailingOver
	}
	if !sawFailover {
		t.Fatalf("history does not show the failover:\n%s", summary(vc))
	}
	// The old primary comes back (node restarts) and must rejoin as a replica.
	if err := cl.StartNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "fo", 90*time.Second, "old primary back as a replica", func(vc *v1alpha1.ValkeyCluster) bool {
		for _, node := range vc.Status.Nodes {
			if node.Pod == oldPrimary {
				return node.Role == v1alpha1.NodeRoleReplica && steadyWith(3)(vc)
			}
		}
		return false
	})
	checkReplication(t, vc, 2)
	for _, want := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{v1beta1.ConditionReady, metav1.ConditionTrue}, {"Degraded", metav1.ConditionFalse}, {"Progressing", metav1.ConditionFalse}} {
		waitFor(t, ns, "fo", 30*time.Second, want.typ+"="+string(want.status)+" once converged", func(vc *v1alpha1.ValkeyCluster) bool {
			return meta.IsStatusConditionPresentAndEqual(vc.Status.Conditions, want.typ, want.status)
		})
	}
	checkReplaysTheSame(t, op, ns, "fo", machine.EventPrimaryLost)
}

// checkReplaysTheSame replays the journal the operator wrote for a cluster: every recorded
// decision (transitions and the observations that caused none) is taken again the same, none
// is unreplayable, and the event want is among them. A what-if with ten detection probes is
// logged, to show what it says about the same run.
func checkReplaysTheSame(t *testing.T, op *operator, ns, name string, want machine.Event) {
	t.Helper()
	rep := journalReplay(t, op, ns, name)
	var out strings.Builder
	_ = rep.Write(&out, false)
	seen := false
	for _, s := range rep.Steps {
		seen = seen || (s.Recorded.Event == want && s.Verdict == replay.Same)
	}
	if rep.Differed != 0 || rep.NotReplayable != 0 || rep.Same < 10 || !seen {
		t.Fatalf("the journal of %s/%s does not replay the same (%d same, %d differed, %d not replayable, %s replayed: %v):\n%s", ns, name, rep.Same, rep.Differed, rep.NotReplayable, want, seen, out.String())
	}
	t.Logf("replay of the operator's journal:\n%s", out.String())
	whatIf := journalReplay(t, op, ns, name, "detectionProbes=10")
	out.Reset()
	_ = whatIf.Write(&out, false)
	t.Logf("what-if:\n%s", out.String())
}
