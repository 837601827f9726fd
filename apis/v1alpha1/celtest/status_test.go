package celtest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// steadyStatus is a status as the operator writes it after a failover.
func steadyStatus() v1alpha1.ValkeyClusterStatus {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	// Microsecond precision survives the round trip: fence timeouts are measured from it.
	micro := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC))
	var conds []metav1.Condition
	for _, typ := range v1beta1.StateConditionTypes() {
		status := metav1.ConditionFalse
		if typ == v1beta1.ConditionSteady {
			status = metav1.ConditionTrue
		}
		conds = append(conds, metav1.Condition{Type: typ, Status: status, Reason: "FailoverComplete", Message: "vk-1 promoted", LastTransitionTime: at, ObservedGeneration: 1})
	}
	conds = append(conds, metav1.Condition{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue, Reason: "FailoverComplete", LastTransitionTime: at})
	return v1alpha1.ValkeyClusterStatus{
		State:              v1alpha1.StateSteady,
		ObservedGeneration: 1,
		Conditions:         conds,
		History: []v1alpha1.HistoryEntry{
			{Seq: 1, Time: at, To: v1alpha1.StateBootstrapping, Event: "cluster-created", Reason: "ClusterCreated", Message: "new cluster"},
			{Seq: 2, Time: at, From: v1alpha1.StateBootstrapping, To: v1alpha1.StateSteady, Event: "bootstrap-complete", Reason: "BootstrapComplete"},
			{Seq: 3, Time: at, From: v1alpha1.StateSteady, To: v1alpha1.StateFailingOver, Event: "primary-lost", Reason: "PrimaryLost", Message: "vk-0 stopped answering"},
			{Seq: 4, Time: at, From: v1alpha1.StateFailingOver, To: v1alpha1.StateSteady, Event: "failover-complete", Reason: "FailoverComplete", Message: "vk-1 promoted"},
		},
		Nodes: []v1alpha1.NodeStatus{
			{Pod: "vk-0", IP: "127.0.0.10", Role: v1alpha1.NodeRoleReplica, ReplicationOffset: 900, Lag: 100, Ready: true},
			{Pod: "vk-1", IP: "127.0.0.11", Role: v1alpha1.NodeRolePrimary, ReplicationOffset: 1000, Ready: true},
			{Pod: "vk-2", Role: v1alpha1.NodeRoleUnknown},
		},
		Primary:       "vk-1",
		ReadyNodes:    "2/3",
		Replicas:      3,
		ReadyReplicas: 2,
		Machine: &v1alpha1.MachineStatus{
			Seq:   4,
			Since: &micro,
			Shards: []v1alpha1.ShardRecord{{
				Primary: "vk-1", RunID: "run-1", Epoch: 1,
				History: v1alpha1.ReplicationHistory{ID: "id-1", PrevID: "id-0", PrevEnd: 900},
			}},
		},
	}
}

// withStatus returns obj with status replaced by s, as the operator's status update sends it.
func withStatus(t *testing.T, obj *unstructured.Unstructured, s v1alpha1.ValkeyClusterStatus) *unstructured.Unstructured {
	t.Helper()
	c := typed(t, obj)
	c.Status = s
	return unstructuredOf(t, c)
}

func TestStatusRoundTrip(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "vk", "{}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := steadyStatus()
	updated, err := vkc.UpdateStatus(ctx, withStatus(t, created, want), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status refused: %v", err)
	}
	if got := typed(t, updated).Status; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("status came back as\n%+v\nwant\n%+v", got, want)
	}
}

// TestStatusValidation checks what the status schema refuses: the operator's writes must
// fit it, or the state machine cannot persist a transition.
func TestStatusValidation(t *testing.T) {
	cases := []struct {
		name   string
		change func(*v1alpha1.ValkeyClusterStatus)
		want   string
	}{
		{"unknown state", func(s *v1alpha1.ValkeyClusterStatus) { s.State = "Sleeping" }, `status.state: Unsupported value: "Sleeping"`},
		{"unknown history state", func(s *v1alpha1.ValkeyClusterStatus) { s.History[0].To = "Sleeping" }, `status.history[0].to: Unsupported value: "Sleeping"`},
		{"unknown node role", func(s *v1alpha1.ValkeyClusterStatus) { s.Nodes[0].Role = "master" }, `status.nodes[0].role: Unsupported value: "master"`},
		{"node listed twice", func(s *v1alpha1.ValkeyClusterStatus) { s.Nodes[2].Pod = "vk-0" }, `status.nodes[2]: Duplicate value`},
		{"condition listed twice", func(s *v1alpha1.ValkeyClusterStatus) { s.Conditions[1].Type = v1beta1.ConditionBootstrapping }, `status.conditions[1]: Duplicate value`},
		// Kubernetes' own rules for conditions: a reason is required and CamelCase, so the
		// machine's kebab-case events must be converted (Event.Reason) before they get here.
		{"condition without a reason", func(s *v1alpha1.ValkeyClusterStatus) { s.Conditions[0].Reason = "" }, "status.conditions[0].reason"},
		{"kebab-case condition reason", func(s *v1alpha1.ValkeyClusterStatus) { s.Conditions[0].Reason = "primary-lost" }, `status.conditions[0].reason: Invalid value: "primary-lost"`},
		{"empty state is left out", func(s *v1alpha1.ValkeyClusterStatus) { s.State = "" }, ""},
	}
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "vk", "{}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := steadyStatus()
			c.change(&s)
			_, err := vkc.UpdateStatus(ctx, withStatus(t, created, s), metav1.UpdateOptions{})
			check(t, err, c.want)
		})
	}
}

// TestStatusSubresourceSeparation checks that spec and status are written through their own
// endpoints only: a status update cannot change the spec, and a spec update cannot change the
// state machine's persisted state.
func TestStatusSubresourceSeparation(t *testing.T) {
	vkc := clusters(t)
	ctx := context.Background()
	created, err := vkc.Create(ctx, object(t, "vk", "{replicas: 3}"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := typed(t, created)
	c.Spec.Replicas = 5
	c.Status = steadyStatus()
	afterStatus, err := vkc.UpdateStatus(ctx, unstructuredOf(t, c), metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := typed(t, afterStatus)
	if got.Spec.Replicas != 3 || got.Status.State != v1alpha1.StateSteady {
		t.Errorf("after a status update: replicas %d (want 3, unchanged), state %q (want Steady)", got.Spec.Replicas, got.Status.State)
	}

	got.Status.State = v1alpha1.StateRestoring
	got.Spec.Replicas = 5
	afterSpec, err := vkc.Update(ctx, unstructuredOf(t, got), metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	final := typed(t, afterSpec)
	if final.Spec.Replicas != 5 || final.Status.State != v1alpha1.StateSteady {
		t.Errorf("after a spec update: replicas %d (want 5), state %q (want Steady, unchanged)", final.Spec.Replicas, final.Status.State)
	}
	if final.Generation != 2 {
		t.Errorf("generation %d after one spec change, want 2 (status updates must not bump it)", final.Generation)
	}
}
