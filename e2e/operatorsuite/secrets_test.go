package operatorsuite

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// TestNoPasswordInLogsEventsStatusOrJournal drives the operator through failures that
// produce errors (the primary killed and failed over, a wrong operator password in the
// Secret, a live directive Valkey refuses), then searches everything the operator writes for
// every password: its log, the Events, the status, the journal. None may hold one.
func TestNoPasswordInLogsEventsStatusOrJournal(t *testing.T) {
	ns := cl.Namespace(t)
	op := startOperator(t, "")
	ctx := ctxFor(t, 5*time.Minute)
	if err := k.Create(ctx, newCluster(ns, "pw", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "pw", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	key := client.ObjectKey{Namespace: ns, Name: "pw-auth"}
	var secret corev1.Secret
	if err := k.Get(ctx, key, &secret); err != nil {
		t.Fatal(err)
	}
	passwords := []string{
		string(secret.Data[kube.KeyOperatorPassword]), string(secret.Data[kube.KeyReplicationPassword]),
		string(secret.Data[kube.KeyClientPassword]), string(secret.Data[kube.KeyProbePassword]), "wrong-" + string(secret.Data[kube.KeyOperatorPassword])[:8],
	}
	if len(secret.Data[kube.KeyProbePassword]) == 0 {
		t.Fatalf("the auth Secret has no %s", kube.KeyProbePassword)
	}

	old := vc.Status.Primary
	if err := cl.KillContainer(ns, old, "valkey"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "pw", 90*time.Second, "failed over", func(vc *v1alpha1.ValkeyCluster) bool {
		done := false
		for _, h := range vc.Status.History {
			done = done || h.Event == "failover-complete"
		}
		return done && steadyWith(3)(vc)
	})

	setOperatorPassword := func(pw string) {
		t.Helper()
		if err := k.Get(ctx, key, &secret); err != nil {
			t.Fatal(err)
		}
		secret.Data[kube.KeyOperatorPassword] = []byte(pw)
		if err := k.Update(ctx, &secret); err != nil {
			t.Fatal(err)
		}
	}
	setOperatorPassword(passwords[3])
	waitFor(t, ns, "pw", 30*time.Second, "the wrong password refused", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "refuse(s) the operator's credentials")
	})
	setOperatorPassword(passwords[0])
	vc = waitFor(t, ns, "pw", 30*time.Second, "Steady again", steadyWith(3))

	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"maxmemory-samples": "0"}
	update(t, ctx, vc)
	vc = waitFor(t, ns, "pw", 30*time.Second, "the refused directive reported", func(vc *v1alpha1.ValkeyCluster) bool {
		return strings.Contains(vc.Status.Waiting, "refused CONFIG SET")
	})
	vc.Spec.Config = nil
	update(t, ctx, vc)
	vc = waitFor(t, ns, "pw", 30*time.Second, "Ready", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && meta.IsStatusConditionTrue(vc.Status.Conditions, v1beta1.ConditionReady)
	})

	texts := map[string]string{"the operator's log": localcluster.SuiteLog(1<<20, "[operator]", ns)}
	var evs eventsv1.EventList
	if err := k.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range evs.Items {
		notes = append(notes, e.Reason+": "+e.Note)
	}
	texts["the Events"] = strings.Join(notes, "\n")
	status, _ := json.Marshal(vc.Status)
	texts["the status"] = string(status)
	texts["the journal"] = journalText(t, op, ns, "pw")
	for what, text := range texts {
		if len(text) < 100 {
			t.Fatalf("%s is almost empty (%d bytes): the search would prove nothing", what, len(text))
		}
		for i, pw := range passwords {
			if strings.Contains(text, pw) {
				t.Errorf("%s holds password %d", what, i)
			}
		}
	}
	t.Logf("searched %d bytes of log, %d Events, %d bytes of status, %d bytes of journal", len(texts["the operator's log"]), len(evs.Items), len(status), len(texts["the journal"]))
}

// journalText is the journal of a cluster as the operator's journal endpoint serves it.
func journalText(t *testing.T, op *operator, ns, name string) string {
	t.Helper()
	code, body := journalGet(t, op.addr, "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/"+ns+"/journals/"+name, "localcluster-admin", "system:masters")
	if code != http.StatusOK {
		t.Fatalf("reading the journal: %d %s", code, body)
	}
	return string(body)
}
