package users

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// acl makes a ValkeyACL of cluster in ns (its password in a Secret that need not exist).
func acl(t *testing.T, c client.Client, ns, name, cluster string) *v1beta1.ValkeyACL {
	t.Helper()
	a := &v1beta1.ValkeyACL{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.ValkeyACLSpec{
			Cluster: cluster, User: name, Rules: []v1beta1.ACLRule{"~app:*", "+@read"},
			PasswordSecretRefs: []v1beta1.SecretKeyRef{{Name: name + "-password"}},
		},
	}
	if err := c.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func statusOf(t *testing.T, c client.Client, a *v1beta1.ValkeyACL) v1beta1.ValkeyACLStatus {
	t.Helper()
	var got v1beta1.ValkeyACL
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(a), &got); err != nil {
		t.Fatal(err)
	}
	return got.Status
}

// The ValkeyACLs of a cluster that does not exist say so (Pending, Ready False), and those of
// other clusters are left alone.
func TestTheACLsOfAMissingClusterSayItIsNotFound(t *testing.T) {
	c := apiClient(t)
	ns := newNamespace(t, c, "users-missing-").Name
	orphan, theirs := acl(t, c, ns, "orphan", "gone"), acl(t, c, ns, "theirs", "here")
	u := &Users{Client: c, Recorder: events.NewFakeRecorder(100)}
	u.WithoutCluster(context.Background(), types.NamespacedName{Namespace: ns, Name: "gone"})
	st := statusOf(t, c, orphan)
	ready := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionACLReady)
	if st.Phase != aclPending || !strings.Contains(st.Reason, "ValkeyCluster gone is not found in namespace "+ns) || ready == nil || ready.Status != metav1.ConditionFalse {
		t.Errorf("the orphan's status: %+v", st)
	}
	if st := statusOf(t, c, theirs); st.Phase != "" {
		t.Errorf("another cluster's ValkeyACL was written: %+v", st)
	}
}

// A turn with no node answering applies nothing: each ValkeyACL of the cluster says why it is
// not applied yet, the turn learns that it reads the users' Secrets, and the cluster's memory
// goes with Forget.
func TestATurnWithoutAnAnsweringNodeAppliesNothingAndSaysWhy(t *testing.T) {
	c := apiClient(t)
	ctx := context.Background()
	ns := newNamespace(t, c, "users-turn-").Name
	app := acl(t, c, ns, "app", "shop")
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop", UID: "shop-uid"}}
	u := &Users{Client: c, Recorder: events.NewFakeRecorder(100)}
	if u.Remembers(vc.UID) || u.Accepted(vc.UID) != nil {
		t.Fatal("a cluster never seen is remembered")
	}
	if reads := u.Apply(ctx, Turn{Cluster: vc, Nodes: []Node{{Name: "shop-0", RunID: "r0"}}}); !reads {
		t.Error("a cluster with a ValkeyACL reads its password Secrets: the turn must know")
	}
	st := statusOf(t, c, app)
	if st.Phase != aclRefused || !strings.Contains(st.Reason, "no node answers") {
		t.Errorf("the ValkeyACL's status: %+v", st)
	}
	if len(u.Accepted(vc.UID)) != 0 || !u.Remembers(vc.UID) {
		t.Errorf("accepted %v, remembered %v", u.Accepted(vc.UID), u.Remembers(vc.UID))
	}
	u.Forget(vc.UID)
	if u.Remembers(vc.UID) {
		t.Error("Forget left the cluster's memory")
	}
	// A cluster no ValkeyACL names reads no Secrets of theirs.
	if u.Apply(ctx, Turn{Cluster: &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain", UID: "plain-uid"}}}) {
		t.Error("a cluster without ValkeyACLs is said to read their Secrets")
	}
}
