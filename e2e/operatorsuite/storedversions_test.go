package operatorsuite

import (
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/operator/storageversion"
)

// TestTheOperatorClearsAStoredVersionItNoLongerStores: CRDs whose storedVersions still name
// v1alpha1 (as an upgrade from a release that stored it leaves them) are brought back to
// [v1beta1] by an in-process operator, under the role the chart ships, which rewrote this
// namespace's objects of each kind through their status subresource. The whole migration,
// from v1alpha1 bytes in etcd, is TestHelmUpgradeFromThePreviousChartKeepsEveryClusterRunning's
// on a cluster of its own; this one runs the operator's requests on the suite's, whose audit
// log checks the role.
func TestTheOperatorClearsAStoredVersionItNoLongerStores(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	vc := newCluster(ns, "kept", v1alpha1.TopologyStandalone, 1)
	acl := newACL(ns, "kept", "kept", "kept", "+get")
	acl.Spec.Cluster = "kept"
	for _, o := range []client.Object{vc, acl, &v1alpha1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}, Spec: v1alpha1.ValkeyBackupSpec{Cluster: "kept"}}} {
		if err := k.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	crds := apiextensionsclient.NewForConfigOrDie(cl.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range storageversion.CRDs {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		crd.Status.StoredVersions = []string{"v1alpha1", "v1beta1"}
		if _, err := crds.UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startOperator(t, "")
	got := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range storageversion.CRDs {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got[name] = crd.Status.StoredVersions; !slices.Equal(got[name], []string{"v1beta1"}) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("storedVersions %v, want [v1beta1] for every CRD: %v", got, err)
	}
	// The operator's own requests (the audit log, not its word): each kind of this namespace
	// rewritten through its status.
	events, err := cl.AuditEvents(operatorSAUser)
	if err != nil {
		t.Fatal(err)
	}
	rewrote := map[string]bool{}
	for _, e := range events {
		if e.Verb == "update" && e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.ObjectRef.Subresource == "status" && e.Code() == 200 {
			rewrote[e.ObjectRef.Resource] = true
		}
	}
	for _, r := range []string{"valkeyclusters", "valkeybackups", "valkeyacls"} {
		if !rewrote[r] {
			t.Errorf("the operator did not update the status of this namespace's %s (audit log)", r)
		}
	}
}
