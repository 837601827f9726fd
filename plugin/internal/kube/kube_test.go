package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

func TestNotFoundHint(t *testing.T) {
	missingObject := apierrors.NewNotFound(v1beta1.Resource("valkeyclusters"), "cache")
	if got := NotFoundHint(missingObject, "prod", "cache").Error(); got != "ValkeyCluster prod/cache not found" {
		t.Errorf("missing object: %q", got)
	}
	// What the API server answers for a resource it does not serve: no name in the details.
	missingCRD := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
	if got := NotFoundHint(missingCRD, "prod", "cache").Error(); !strings.Contains(got, "is the ValkeyCluster CRD installed?") {
		t.Errorf("missing CRD: %q", got)
	}
	other := errors.New("connection refused")
	if got := NotFoundHint(other, "prod", "cache"); got != other {
		t.Errorf("other errors pass through unchanged, got %v", got)
	}
}

func TestTypedRoundTrip(t *testing.T) {
	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "prod"}}
	vc.Status.State = v1beta1.StateSteady
	vc.Status.Nodes = []v1beta1.NodeStatus{{Pod: "cache-0", Role: v1beta1.NodeRolePrimary, ReplicationOffset: 7}}
	u, err := Unstructured(vc)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "ValkeyCluster" || u.GetAPIVersion() != "valkey.fsm.dev/v1beta1" {
		t.Errorf("kind %q apiVersion %q", u.GetKind(), u.GetAPIVersion())
	}
	back, err := Typed(u)
	if err != nil {
		t.Fatal(err)
	}
	if back.Status.State != v1beta1.StateSteady || back.Status.Nodes[0].ReplicationOffset != 7 {
		t.Errorf("status did not survive: %+v", back.Status)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"nodes": "not a list"}}}
	if _, err := Typed(bad); err == nil {
		t.Error("a malformed status converted without error")
	}
}

// The flags select the kubeconfig, context and namespace as kubectl's do.
func TestFlags(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
- name: b
  cluster: {server: "https://127.0.0.2:6443"}
users:
- name: u
  user: {token: secret}
contexts:
- name: first
  context: {cluster: a, user: u, namespace: team-a}
- name: second
  context: {cluster: b, user: u}
current-context: first
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	for _, c := range []struct {
		args       []string
		server, ns string
	}{
		{[]string{"--kubeconfig", kubeconfig}, "https://127.0.0.1:6443", "team-a"},
		{[]string{"--kubeconfig", kubeconfig, "--context", "second"}, "https://127.0.0.2:6443", "default"},
		{[]string{"--kubeconfig", kubeconfig, "-n", "prod"}, "https://127.0.0.1:6443", "prod"},
	} {
		f := NewFlags()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		f.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		ns, err := f.Namespace()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != c.server || ns != c.ns || cfg.UserAgent != "kubectl-valkey" {
			t.Errorf("%v: host %q namespace %q agent %q, want %q %q", c.args, cfg.Host, ns, cfg.UserAgent, c.server, c.ns)
		}
	}
}
