package conversionwebhook_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/conversionwebhook"
)

// kube is a client of the package's API server that knows both versions, in a fresh namespace.
func kube(t *testing.T) (client.Client, string) {
	t.Helper()
	_, cfg := server.Start(t)
	s := conversionwebhook.Scheme()
	_ = apiextensionsv1.AddToScheme(s)
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "conv-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return c, ns.Name
}

// A cluster written as v1alpha1 reads as v1beta1 with v1beta1's names and counts, an update
// in v1beta1 reads back in v1alpha1, and the object is stored as v1beta1.
func TestAV1alpha1ClusterReadsAndUpdatesAsV1beta1(t *testing.T) {
	c, ns := kube(t)
	ctx := context.Background()
	old := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}, Spec: v1alpha1.ValkeyClusterSpec{
		Topology: v1alpha1.TopologyReplication, Replicas: 3,
		Auth: v1alpha1.AuthSpec{ExistingSecret: &v1alpha1.SecretKeyReference{Name: "pw", Key: "secret"}},
	}}
	if err := c.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	var hub v1beta1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &hub); err != nil {
		t.Fatal(err)
	}
	if r := hub.Spec.Replicas; r == nil || *r != 2 {
		t.Fatalf("v1alpha1 replicas 3 (pods) reads as v1beta1 replicas %v, want 2 (replicas of the primary)", ptr.Deref(r, -1))
	}
	if ref := hub.Spec.Auth.PasswordSecretRef; ref == nil || ref.Name != "pw" || ref.Key != "secret" {
		t.Fatalf("auth.existingSecret reads as v1beta1 passwordSecretRef %+v", ref)
	}
	hub.Spec.Replicas = ptr.To[int32](4)
	if err := c.Update(ctx, &hub); err != nil {
		t.Fatal(err)
	}
	var back v1alpha1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Replicas != 5 || back.Spec.Auth.ExistingSecret == nil || back.Spec.Auth.ExistingSecret.Name != "pw" {
		t.Fatalf("after the v1beta1 update v1alpha1 reads replicas %d, existingSecret %+v; want 5 and pw", back.Spec.Replicas, back.Spec.Auth.ExistingSecret)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "valkeyclusters.valkey.fsm.dev"}, &crd); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(crd.Status.StoredVersions, "v1beta1") {
		t.Fatalf("after writes the CRD's storedVersions are %v, want v1beta1 among them", crd.Status.StoredVersions)
	}
}

// A field v1alpha1 lacks survives an update through v1alpha1 (it rides in an annotation).
func TestAV1beta1FieldSurvivesAV1alpha1Update(t *testing.T) {
	c, ns := kube(t)
	ctx := context.Background()
	hub := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns}, Spec: v1beta1.ValkeyClusterSpec{
		PriorityClassName: "data-critical",
	}}
	if err := c.Create(ctx, hub); err != nil {
		t.Fatal(err)
	}
	var old v1alpha1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(hub), &old); err != nil {
		t.Fatal(err)
	}
	old.Spec.Image = "valkey/valkey:9.1"
	if err := c.Update(ctx, &old); err != nil {
		t.Fatal(err)
	}
	var got v1beta1.ValkeyCluster
	if err := c.Get(ctx, client.ObjectKeyFromObject(hub), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.PriorityClassName != "data-critical" || got.Spec.Image != "valkey/valkey:9.1" {
		t.Fatalf("after a v1alpha1 update v1beta1 reads priorityClassName %q, image %q", got.Spec.PriorityClassName, got.Spec.Image)
	}
}

// kubectl explain describes both served versions.
func TestKubectlExplainsBothVersions(t *testing.T) {
	env, _ := server.Start(t)
	user, err := env.AddUser(envtest.User{Name: "explainer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := user.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	for version, want := range map[string]string{"v1alpha1": "existingSecret", "v1beta1": "priorityClassName"} {
		args := []string{"explain", "valkeyclusters.spec", "--recursive", "--api-version=valkey.fsm.dev/" + version}
		cmd := exec.Command(filepath.Join(env.BinaryAssetsDirectory, "kubectl"), append(kubectl.Opts, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "VERSION:    "+version) || !strings.Contains(string(out), want) {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
