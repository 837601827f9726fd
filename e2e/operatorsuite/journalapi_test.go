package operatorsuite

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

const journalAPIService = "v1alpha1.journal.valkey.fsm.dev"

// registerJournalAPI makes the API server proxy the journal API to addr, with an APIService
// whose CA is caPEM (none: not verified). The local cluster's API server refuses loopback
// Endpoints, so the Service is an ExternalName naming the address (in a real cluster the
// chart's ClusterIP Service selects the operator's pods). It waits until the API is served.
func registerJournalAPI(t *testing.T, ns, addr string, caPEM []byte) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var port int32
	if _, err := fmt.Sscan(portText, &port); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: host, Ports: []corev1.ServicePort{{Name: "https", Port: port}}},
	}
	if err := k.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{
		"group": "journal.valkey.fsm.dev", "version": "v1alpha1", "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		"service": map[string]any{"namespace": ns, "name": "journal", "port": int64(port)},
	}
	if caPEM != nil {
		spec["caBundle"] = caPEM
	} else {
		spec["insecureSkipTLSVerify"] = true
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": journalAPIService}, "spec": spec,
	}}
	if err := k.Create(ctx, apiService); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), apiService) })
	waitJournalAPIServed(t, ctx)
}

// waitJournalAPIServed waits until the API server serves the journal API (the aggregator found
// the APIService available), and says why not when it does not within 45 s.
func waitJournalAPIServed(t *testing.T, ctx context.Context) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		_, err := cl.Clientset().Discovery().RESTClient().Get().AbsPath("/apis/journal.valkey.fsm.dev/v1alpha1").DoRaw(ctx)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			got := &unstructured.Unstructured{}
			got.SetAPIVersion("apiregistration.k8s.io/v1")
			got.SetKind("APIService")
			_ = k.Get(ctx, client.ObjectKey{Name: journalAPIService}, got)
			t.Fatalf("the journal API is not served: %v\nAPIService status: %v", err, got.Object["status"])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// servingCert writes a certificate for the Service journal.<ns>.svc and 127.0.0.1 (with its
// CA) into a directory, as the chart's Secret holds it, and returns the directory and the CA.
func servingCert(t *testing.T, ns string) (string, []byte) {
	t.Helper()
	dnsName := "journal." + ns + ".svc"
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(dnsName, []net.IP{net.ParseIP("127.0.0.1")}, []string{dnsName})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// certPEM is the serving certificate followed by the CA that signed it.
	return dir, certPEM
}

// asServiceAccount is a connection to the API server with a token of ns/name.
func asServiceAccount(t *testing.T, ns, name, clusterRole string) *rest.Config {
	t.Helper()
	return tokenConfig(cl, serviceAccountToken(t, ns, name, clusterRole))
}

// TestTheJournalIsReadThroughTheAPIServerWithTheUsersRights: the operator's journal is an
// aggregated API. A ServiceAccount with get on journals in the cluster's namespace reads it
// (kubectl get --raw, and kubectl valkey history --full with its own kubeconfig); one without
// is refused by the API server; the same one is refused in a namespace where it has no
// RoleBinding. Straight to the operator's port: refused without the API server's front-proxy
// certificate, and, with it, for a user the API server would refuse.
func TestTheJournalIsReadThroughTheAPIServerWithTheUsersRights(t *testing.T) {
	ns, elsewhere := cl.Namespace(t), cl.Namespace(t)
	certDir, ca := servingCert(t, ns)
	op := startOperator(t, "", func(c *manager.Config) { c.JournalCertDir = certDir })
	ctx := ctxFor(t, 3*time.Minute)
	for _, n := range []string{ns, elsewhere} {
		if err := k.Create(ctx, newCluster(n, "jr", v1alpha1.TopologyStandalone, 1)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, n, "jr", 2*time.Minute, "Steady", steadyWith(1))
	}
	registerJournalAPI(t, ns, op.addr, ca)

	reader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "suite-journal-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"journal.valkey.fsm.dev"}, Resources: []string{"journals"}, Verbs: []string{"get"}}},
	}
	if err := k.Create(ctx, reader); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "sre"}},
	}
	if err := k.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	sre, stranger := asServiceAccount(t, ns, "sre", ""), asServiceAccount(t, ns, "stranger", "")
	get := func(cfg *rest.Config, n string) ([]byte, error) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs.Discovery().RESTClient().Get().AbsPath("/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/"+n+"/journals/jr").Param("limit", "1").DoRaw(ctx)
	}
	// RBAC propagates within a moment.
	var body []byte
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if body, err = get(sre, ns); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !strings.Contains(string(body), `"kind":"JournalPage"`) || !strings.Contains(string(body), `"Bootstrapping"`) {
		t.Fatalf("the reader through the API server: %v %s", err, body)
	}
	if _, err := get(stranger, ns); !apierrors.IsForbidden(err) {
		t.Errorf("a ServiceAccount without the right: %v, want Forbidden", err)
	}
	if _, err := get(sre, elsewhere); !apierrors.IsForbidden(err) {
		t.Errorf("the reader in a namespace where it has no RoleBinding: %v, want Forbidden", err)
	}

	// kubectl valkey history --full with the reader's own kubeconfig.
	out, err := exec.Command(pluginBinary(t), "history", "jr", "-n", ns, "--full", "--kubeconfig", kubeconfigFor(t, sre)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Bootstrapping -> Steady") {
		t.Errorf("kubectl valkey history --full as the reader: %v\n%s", err, out)
	}
	out, err = exec.Command(pluginBinary(t), "history", "jr", "-n", ns, "--full", "--kubeconfig", kubeconfigFor(t, stranger)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "forbidden") || !strings.Contains(string(out), "valkey-operator-journal-reader") {
		t.Errorf("kubectl valkey history --full without the right: %v\n%s", err, out)
	} else {
		t.Logf("kubectl valkey history --full without the right says:\n%s", out)
	}

	// Straight to the operator.
	path := "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/" + ns + "/journals/jr"
	if code, body := journalGet(t, op.addr, path, ""); code != http.StatusUnauthorized {
		t.Errorf("without the front proxy's certificate: %d %s, want 401", code, body)
	}
	if code, body := journalGet(t, op.addr, path, "system:serviceaccount:"+ns+":stranger", "system:serviceaccounts"); code != http.StatusForbidden {
		t.Errorf("for a user without the right: %d %s, want 403", code, body)
	}
}

// kubeconfigFor writes a kubeconfig file for cfg (a token user).
func kubeconfigFor(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	kc.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
