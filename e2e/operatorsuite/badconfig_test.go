package operatorsuite

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestAPodThatDoesNotStartSaysWhy: a directive Valkey refuses (the API cannot know every
// directive) makes the server exit at start. Valkey's own error reaches status.waiting, the
// Degraded condition, an Event and `kubectl valkey status`, within about a probe interval of
// the first failed start (the container's termination message, FallbackToLogsOnError).
func TestAPodThatDoesNotStartSaysWhy(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 2*time.Minute)
	vc := newCluster(ns, "badconf", v1alpha1.TopologyStandalone, 1)
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"no-such-directive": "yes"}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	const valkeySays = "Bad directive or wrong number of arguments"
	var firstFailure, seen time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var pod corev1.Pod
		if firstFailure.IsZero() && k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "badconf-0"}, &pod) == nil {
			for _, cs := range pod.Status.ContainerStatuses {
				for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
					if st.Terminated != nil && st.Terminated.ExitCode != 0 {
						firstFailure = st.Terminated.FinishedAt.Time
					}
				}
			}
		}
		var cur v1alpha1.ValkeyCluster
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "badconf"}, &cur); err != nil {
			return false, nil
		}
		vc = &cur
		return strings.Contains(cur.Status.Waiting, valkeySays), nil
	})
	seen = time.Now()
	if err != nil {
		t.Fatalf("status.waiting never gave Valkey's reason: %q\n%s", vc.Status.Waiting, operatorTrail(ns))
	}
	// FinishedAt has a precision of one second; the probe interval is one second.
	took := seen.Sub(firstFailure)
	t.Logf("status.waiting within %s of the first failed start (container finished at %s): %s", took.Round(10*time.Millisecond), firstFailure.Format(time.RFC3339), vc.Status.Waiting)
	if firstFailure.IsZero() || took > 3*time.Second {
		t.Fatalf("the reason reached status %s after the first failed start, want within a probe interval (1 s, plus the timestamp's second)", took)
	}
	if !strings.Contains(vc.Status.Waiting, "badconf-0 does not start") {
		t.Fatalf("waiting does not name the pod: %q", vc.Status.Waiting)
	}
	if d := meta.FindStatusCondition(vc.Status.Conditions, "Degraded"); d == nil || d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, valkeySays) {
		t.Fatalf("Degraded does not carry Valkey's reason: %+v", d)
	}
	waitEvent(t, ctx, ns, "PodNotStarting", valkeySays)
	out, err := exec.Command(pluginBinary(t), "status", "badconf", "-n", ns, "--kubeconfig", cl.KubeconfigPath()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), valkeySays) {
		t.Fatalf("kubectl valkey status does not show why the pod does not start (%v):\n%s", err, out)
	}
	// Fixing the spec lets it start: the error goes away with it. The crash-looping container
	// may be in kubelet's back-off (10 s, 20 s, 40 s ...) when the fix lands: its next start
	// can be most of a minute away.
	vc = get(t, ns, "badconf")
	vc.Spec.Config = nil
	update(t, ctx, vc)
	waitFor(t, ns, "badconf", 2*time.Minute, "Steady and Ready once the directive is gone", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(1)(vc) && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady) && !strings.Contains(vc.Status.Waiting, "does not start")
	})
}
