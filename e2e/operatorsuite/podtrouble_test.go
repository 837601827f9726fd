package operatorsuite

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// When Kubernetes holds a pod back, the cluster says so where users look: status.waiting and
// the Degraded condition name the pod, what happened and what to change, with an Event and a
// log line. Each case is one the local cluster now reports as a kubelet or a provisioner does.
func TestAPodHeldBackByKubernetesSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*v1alpha1.ValkeyCluster)
		says []string
	}{
		{"image", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Image = "registry.invalid/valkey:0" },
			[]string{"-0 does not start: image registry.invalid/valkey:0 cannot be pulled", "no such host", "set spec.image"}},
		{"claim", func(vc *v1alpha1.ValkeyCluster) { vc.Spec.Storage.Size = ptr.To(resource.MustParse("1Ei")) },
			[]string{"-0 does not start: its claim data-", "asks for 1Ei and is Pending", "set spec.storage.size"}},
		{"crashloop", func(vc *v1alpha1.ValkeyCluster) {
			vc.Spec.Config = map[string]v1alpha1.ConfigValue{"no-such-directive": "yes"}
		}, []string{"-0 does not start:", "Bad directive", "it crash-loops (exit code 1", "kubelet restarts it with a growing back-off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := cl.Namespace(t)
			startOperator(t, "")
			vc := newCluster(ns, "held-"+c.name, v1alpha1.TopologyStandalone, 1)
			c.set(vc)
			ctx := ctxFor(t, 2*time.Minute)
			if err := k.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			vc = waitFor(t, ns, vc.Name, time.Minute, "status.waiting says why the pod is held back", func(vc *v1alpha1.ValkeyCluster) bool {
				for _, s := range c.says {
					if !strings.Contains(vc.Status.Waiting, s) {
						return false
					}
				}
				return true
			})
			t.Logf("status.waiting: %s", vc.Status.Waiting)
			d := meta.FindStatusCondition(vc.Status.Conditions, "Degraded")
			if d == nil || d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, c.says[0]) {
				t.Errorf("Degraded does not say it: %+v", d)
			}
			waitEvent(t, ctx, ns, "PodNotStarting", c.says[len(c.says)-1])
			if l := localcluster.SuiteLog(5, ns, `"msg":"pod does not start"`); !strings.Contains(l, vc.Name+"-0") {
				t.Errorf("no log line names the pod: %q", l)
			}
		})
	}
}
