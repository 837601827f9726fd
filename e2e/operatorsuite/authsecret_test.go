package operatorsuite

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestALostAuthSecretNeverReKeysRunningNodes: the auth Secret is deleted. The operator puts it
// back with the passwords the running nodes use (it remembers them); after an operator restart
// it remembers none, and then it generates nothing (new passwords would lock it out of every
// running node) but waits and says what to do; the Secret put back by hand, the cluster goes
// on. A wrong password in the Secret is reported as the nodes refusing the operator's
// credentials, not as nodes that do not answer.
func TestALostAuthSecretNeverReKeysRunningNodes(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "ak", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "ak", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	key := client.ObjectKey{Namespace: ns, Name: "ak-auth"}
	var saved corev1.Secret
	if err := k.Get(ctx, key, &saved); err != nil {
		t.Fatal(err)
	}
	deleteSecret := func() {
		t.Helper()
		if err := k.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ak-auth"}}); err != nil {
			t.Fatal(err)
		}
	}
	samePasswords := func() bool {
		var s corev1.Secret
		if err := k.Get(ctx, key, &s); err != nil {
			return false
		}
		for _, k := range []string{kube.KeyOperatorPassword, kube.KeyReplicationPassword, kube.KeyClientPassword} {
			if string(s.Data[k]) != string(saved.Data[k]) {
				return false
			}
		}
		return true
	}

	deleteSecret()
	waitEvent(t, ctx, ns, "AuthSecretRestored", "operator-password")
	waitFor(t, ns, "ak", 30*time.Second, "the Secret back with the same passwords, the cluster Ready", func(vc *v1alpha1.ValkeyCluster) bool {
		return samePasswords() && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})
	writable(t, vc)

	// A new operator process remembers nothing.
	op.stop(t)
	startOperator(t, "")
	deleteSecret()
	waitFor(t, ns, "ak", 30*time.Second, "waiting, saying the Secret is lost and what to do", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "auth Secret lost") && strings.Contains(vc.Status.Waiting, "put the Secret back")
	})
	time.Sleep(3 * time.Second)
	if err := k.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the operator made a new auth Secret for running nodes (%v)", err)
	}
	restore := saved.DeepCopy()
	restore.ResourceVersion, restore.UID, restore.CreationTimestamp = "", "", metav1.Time{}
	if err := k.Create(ctx, restore); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "ak", 30*time.Second, "going on once the Secret is back", func(vc *v1alpha1.ValkeyCluster) bool {
		return !strings.Contains(vc.Status.Waiting, "auth Secret lost") && steadyWith(3)(vc) && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})

	// A wrong operator password: the nodes answer and refuse it.
	var s corev1.Secret
	if err := k.Get(ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	s.Data[kube.KeyOperatorPassword] = []byte("not-the-password")
	if err := k.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "ak", 30*time.Second, "the refusal named as such", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "refuse(s) the operator's credentials")
	})
	waitEvent(t, ctx, ns, "AuthenticationFailed", "WRONGPASS")
	if err := k.Get(ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	s.Data[kube.KeyOperatorPassword] = saved.Data[kube.KeyOperatorPassword]
	if err := k.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "ak", 30*time.Second, "back once the password is", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.Waiting == "" && steadyWith(3)(vc)
	})
}
