package operatorsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/etcdkv"
	"github.com/valkey-fsm/valkey-operator/operator/storageversion"
)

// What the upgrade test holds the storage migration to: the CRDs' storedVersions, the bytes in
// etcd, the operator's log line per kind and its requests in the audit log.

func checkStoredVersions(t *testing.T, ctx context.Context, lc *localcluster.Cluster, want []string) {
	t.Helper()
	cs := apiextensionsclient.NewForConfigOrDie(lc.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	for _, name := range storageversion.CRDs {
		crd, err := cs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(crd.Status.StoredVersions, want) {
			t.Fatalf("%s: storedVersions %v, want %v", name, crd.Status.StoredVersions, want)
		}
	}
}

func waitStoredVersions(t *testing.T, ctx context.Context, lc *localcluster.Cluster, want []string, timeout time.Duration) {
	t.Helper()
	cs := apiextensionsclient.NewForConfigOrDie(lc.RESTConfig()).ApiextensionsV1().CustomResourceDefinitions()
	got := map[string][]string{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range storageversion.CRDs {
			crd, err := cs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			got[name] = crd.Status.StoredVersions
			if !slices.Equal(crd.Status.StoredVersions, want) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("storedVersions %v, want %v for every CRD", got, want)
	}
}

// checkStoredAs reads every object from etcd (not through the API server, which answers in
// whatever version it is asked for) and checks the version it is stored in.
func checkStoredAs(t *testing.T, ctx context.Context, lc *localcluster.Cluster, objects []client.Object, version string) {
	t.Helper()
	for _, o := range objects {
		resource := map[string]string{"*v1alpha1.ValkeyCluster": "valkeyclusters", "*v1alpha1.ValkeyACL": "valkeyacls", "*v1alpha1.ValkeyBackup": "valkeybackups"}[fmt.Sprintf("%T", o)]
		got, err := etcdkv.StoredAPIVersion(ctx, lc.EtcdURL(), v1alpha1.GroupName, resource, o.GetNamespace(), o.GetName())
		if err != nil {
			t.Fatal(err)
		}
		if want := v1alpha1.GroupName + "/" + version; got != want {
			t.Errorf("%s %s/%s is stored in etcd as %s, want %s", resource, o.GetNamespace(), o.GetName(), got, want)
		}
	}
}

// checkMigrationLogged finds the new operator's log line for each kind.
func checkMigrationLogged(t *testing.T, lc *localcluster.Cluster, opNS string) {
	t.Helper()
	pl, err := lc.Clientset().CoreV1().Pods(opNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(pl.Items) != 1 {
		t.Fatalf("want one operator pod: %v, %v", pl, err)
	}
	path, err := lc.LogPath(opNS, pl.Items[0].Name, "operator")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	logged := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg       string `json:"msg"`
			CRD       string `json:"crd"`
			Objects   int    `json:"objects"`
			Rewritten int    `json:"rewritten"`
		}
		// How many it rewrote depends on who wrote first: the old operator's last status
		// patches and the new one's first are stored as v1beta1 too. etcd (checkStoredAs)
		// says whether every object got there.
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "stored objects moved to the storage version" && line.Rewritten <= line.Objects {
			logged[line.CRD] = fmt.Sprintf("%d objects", line.Objects)
		}
	}
	want := map[string]string{
		"valkeyclusters.valkey.fsm.dev": "3 objects",
		"valkeyacls.valkey.fsm.dev":     "3 objects",
		"valkeybackups.valkey.fsm.dev":  "1 objects",
	}
	for crd, w := range want {
		if logged[crd] != w {
			t.Errorf("the new operator logged for %s: %q, want %q", crd, logged[crd], w)
		}
	}
}

// checkChartOperatorRefusedNothing reads the upgrade cluster's audit log: the chart's operator
// (old and new, one ServiceAccount) was refused no request, and the new one set the CRDs'
// storedVersions itself.
func checkChartOperatorRefusedNothing(t *testing.T, lc *localcluster.Cluster, opNS, release string) {
	t.Helper()
	events, err := lc.AuditEvents("system:serviceaccount:" + opNS + ":" + release)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	setStored := 0
	for _, e := range events {
		if e.Forbidden() {
			errs = append(errs, fmt.Errorf("RBAC refused the chart's operator %s %s", e.Verb, e.RequestURI))
		}
		if e.Verb == "update" && e.Resource() == "apiextensions.k8s.io/customresourcedefinitions/status" && e.Code() == 200 {
			setStored++
		}
	}
	if setStored < len(storageversion.CRDs) {
		errs = append(errs, fmt.Errorf("the operator updated CRD status %d times, want once per CRD at least", setStored))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
