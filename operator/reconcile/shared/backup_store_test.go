package shared

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/actuators/backup"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A store without a credentials Secret is refused, before anything is read or sent, unless the
// operator's administrator let stores use the operator's own identity; the refusal names both
// ways out.
func TestAStoreWithoutASecretIsRefusedUnlessTheOperatorAllowsItsIdentity(t *testing.T) {
	r := Stores{}
	_, err := r.Open(context.Background(), "ns", v1beta1.BackupStore{Bucket: "b"})
	if !errors.Is(err, errNoCredentialsSecret) {
		t.Fatalf("a store without credentials: %v, want the refusal", err)
	}
	for _, way := range []string{"name a Secret with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "--backup-ambient-credentials", "backup.ambientCredentials"} {
		if !strings.Contains(err.Error(), way) {
			t.Errorf("the refusal does not say %q: %v", way, err)
		}
	}

	r.Ambient = backup.NewAmbientCredentials()
	store, err := r.Open(context.Background(), "ns", v1beta1.BackupStore{Bucket: "b", Region: "eu-west-1"})
	if err != nil {
		t.Fatalf("a store without a Secret, the operator's identity allowed: %v", err)
	}
	if store.Ambient != r.Ambient || store.AccessKey != "" || store.Bucket != "b" || store.Region != "eu-west-1" {
		t.Errorf("the store: %+v", store)
	}
	if got := store.CredentialsSource(); got != "the operator's default chain" {
		t.Errorf("the store's credentials are said to be %q", got)
	}
	// The endpoint is checked for these stores too.
	if _, err := r.Open(context.Background(), "ns", v1beta1.BackupStore{Bucket: "b", Endpoint: "http://s3.example"}); !errors.Is(err, backup.ErrPlainHTTP) {
		t.Errorf("a plain-HTTP endpoint without allowPlainHTTP: %v", err)
	}
}

// A store naming a Secret uses it, and never the operator's identity, even where that is
// allowed: a Secret missing or without a key is refused with the Secret's name.
func TestAStoreNamingABrokenSecretNeverFallsBackToTheOperatorsIdentity(t *testing.T) {
	c := apiClient(t)
	ns := newNamespace(t, c, "store-").Name
	ctx := context.Background()
	half := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "half"}, StringData: map[string]string{SecretAccessKeyID: "id"}}
	whole := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "whole"}, StringData: map[string]string{SecretAccessKeyID: "id", SecretSecretAccessKey: "secret"}}
	for _, s := range []*corev1.Secret{half, whole} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r := Stores{Reader: c, Ambient: backup.NewAmbientCredentials()}
	for secret, want := range map[string]string{
		"missing": "the store's credentials Secret " + ns + "/missing does not exist",
		"half":    "the store's credentials Secret " + ns + "/half has no AWS_SECRET_ACCESS_KEY",
	} {
		store, err := r.Open(ctx, ns, v1beta1.BackupStore{Bucket: "b", CredentialsSecretRef: &v1beta1.SecretRef{Name: secret}})
		if err == nil || !strings.Contains(err.Error(), want) || store.Ambient != nil {
			t.Errorf("the Secret %s: store %+v, error %v; want %q and no store", secret, store, err, want)
		}
	}
	store, err := r.Open(ctx, ns, v1beta1.BackupStore{Bucket: "b", CredentialsSecretRef: &v1beta1.SecretRef{Name: "whole"}})
	if err != nil {
		t.Fatal(err)
	}
	if store.AccessKey != "id" || store.SecretKey != "secret" || store.Ambient != nil {
		t.Errorf("the store of a complete Secret: %+v", store)
	}
	if got, want := store.CredentialsSource(), "the Secret "+ns+"/whole"; got != want {
		t.Errorf("the store's credentials are said to be %q, want %q", got, want)
	}
}
