package nodecli

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// Password reads a user's current password from the cluster's auth Secret: "" when the user
// has none (the application user of a cluster with spec.auth.enabled=false). The operator
// publishes a rotated password there only once every running node accepts it.
func Password(ctx context.Context, core kubernetes.Interface, namespace, cluster, key string) (string, error) {
	name := kube.AuthSecret(cluster)
	s, err := core.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("reading the password from Secret %s/%s: %w\nvalkey-cli authenticates with it: ask for get on that Secret", namespace, name, err)
	case err != nil:
		return "", fmt.Errorf("reading the password from Secret %s/%s: %w", namespace, name, err)
	}
	return string(s.Data[key]), nil
}
