package operatorsuite

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceAccountToken makes a ServiceAccount in ns (when missing), binds it to clusterRole
// (none: no binding) and returns a token of it.
func serviceAccountToken(t testing.TB, ns, name, clusterRole string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := cl.Clientset()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if clusterRole != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		})
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// getMetrics reads the operator's metrics endpoint at addr (host:port) over HTTPS with token ("" for
// none) and returns the status code and body. The endpoint's certificate is self-signed (the
// chart's default; a user gives the operator a real one with --metrics-cert-dir), so it is
// not verified here: what is tested is who may read, not who serves.
func getMetrics(t testing.TB, addr, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test endpoint, see above
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// checkMetricsNeedTheRight: no token, a token without the right, and a token of a
// ServiceAccount bound to the chart's metrics-reader ClusterRole.
func checkMetricsNeedTheRight(t *testing.T, ns, addr, readerRole string) string {
	t.Helper()
	if code, _ := getMetrics(t, addr, ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d, want 401", code)
	}
	if code, body := getMetrics(t, addr, serviceAccountToken(t, ns, "no-metrics", "")); code != http.StatusForbidden {
		t.Errorf("metrics with a token that may not read them: %d, want 403 (%.200s)", code, body)
	}
	code, body := getMetrics(t, addr, serviceAccountToken(t, ns, "prometheus", readerRole))
	if code != http.StatusOK {
		t.Fatalf("metrics as the metrics reader: %d %.300s", code, body)
	}
	return body
}

func scrapeAs(b testing.TB, addr, token string) string {
	b.Helper()
	code, body := getMetrics(b, addr, token)
	if code != http.StatusOK {
		b.Fatalf("scraping %s: %d %.300s", addr, code, body)
	}
	return body
}

// TestMetricsAreReadOnlyByWhoMayGetThem: the operator's metrics endpoint asks the API server
// (TokenReview, SubjectAccessReview) whether the caller may get /metrics.
func TestMetricsAreReadOnlyByWhoMayGetThem(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	ns := cl.Namespace(t)
	addr, _ := metricsOperator(t, ns)
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The endpoint starts with the manager.
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics endpoint does not listen: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	body = checkMetricsNeedTheRight(t, ns, addr, metricsReaderRole)
	if !strings.Contains(body, "valkey_operator_journal_available") {
		t.Errorf("the metrics read lack the operator's own: %.300s", body)
	}
}
