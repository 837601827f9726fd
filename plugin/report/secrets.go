package report

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

var valkeyACLs = v1beta1.SchemeGroupVersion.WithResource("valkeyacls")

// secretValues reads every value of the cluster's Secrets, for the redactor: the auth Secret,
// a rotation's, the ones the spec names (the application password, the certificate, the
// object store's credentials), the ValkeyACL users' passwords, and any other carrying the
// cluster's label. What cannot be read is said in the notes: its values are then redacted only
// where they match a pattern.
func secretValues(ctx context.Context, core kubernetes.Interface, dyn dynamic.Interface, vc *v1beta1.ValkeyCluster) (values, notes []string) {
	ns := vc.Namespace
	names := []string{kube.AuthSecret(vc.Name), kube.RotationSecret(vc.Name)}
	if ref := vc.Spec.Auth.PasswordSecretRef; ref != nil {
		names = append(names, ref.Name)
	}
	if s := v1beta1.TLSSecretName(vc); s != "" {
		names = append(names, s)
	}
	if b := vc.Spec.Backup; b != nil && b.Store.CredentialsSecretName() != "" {
		names = append(names, b.Store.CredentialsSecretName())
	}
	if acls, err := dyn.Resource(valkeyACLs).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
		notes = append(notes, fmt.Sprintf("the ValkeyACL users' password Secrets are not known (listing ValkeyACLs: %v): their values are redacted only where a pattern matches", err))
	} else {
		for _, u := range acls.Items {
			if c, _, _ := unstructured.NestedString(u.Object, "spec", "cluster"); c != vc.Name {
				continue
			}
			refs, _, _ := unstructured.NestedSlice(u.Object, "spec", "passwordSecretRefs")
			for _, r := range refs {
				if m, ok := r.(map[string]any); ok {
					if n, ok := m["name"].(string); ok {
						names = append(names, n)
					}
				}
			}
		}
	}
	if labelled, err := core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.ClusterSelector(vc.Name)}); err == nil {
		for _, s := range labelled.Items {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		s, err := core.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // a rotation's Secret between rotations, a certificate not issued yet
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("Secret %s could not be read (%v): its values are redacted only where a pattern matches", name, err))
			continue
		}
		for _, v := range s.Data {
			values = append(values, string(v))
		}
		for _, v := range s.StringData {
			values = append(values, v)
		}
	}
	return values, notes
}
