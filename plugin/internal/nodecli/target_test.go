package nodecli

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

func pod(cluster string, phase corev1.PodPhase, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "cache-1", Labels: map[string]string{kube.LabelCluster: cluster}, Annotations: annotations},
		Status:     corev1.PodStatus{Phase: phase, PodIP: "10.0.0.7"},
	}
}

// A session goes only to a running pod of the cluster whose password it carries, over TLS when
// the pod serves it, with no password among valkey-cli's arguments.
func TestTargetOfPod(t *testing.T) {
	if _, err := TargetOfPod(pod("other", corev1.PodRunning, nil), "cache"); err == nil || !strings.Contains(err.Error(), "not a pod of ValkeyCluster cache") {
		t.Errorf("a pod of another cluster: %v", err)
	}
	if _, err := TargetOfPod(pod("cache", corev1.PodPending, nil), "cache"); err == nil || !strings.Contains(err.Error(), "is Pending") {
		t.Errorf("a pending pod: %v", err)
	}
	plain, err := TargetOfPod(pod("cache", corev1.PodRunning, nil), "cache")
	if err != nil {
		t.Fatal(err)
	}
	if got := Args(plain, "default", true, "GET", "k"); !slices.Equal(got, []string{"valkey-cli", "-h", "10.0.0.7", "-p", "6379", "--user", "default", "--askpass", "GET", "k"}) {
		t.Errorf("plain: %q", got)
	}
	secure, err := TargetOfPod(pod("cache", corev1.PodRunning, map[string]string{kube.AnnotationTLS: "TLSOnly"}), "cache")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"valkey-cli", "-h", "10.0.0.7", "-p", "6380", "--tls", "--cacert", "/etc/valkey/tls/ca.crt", "--cert", "/etc/valkey/tls/tls.crt", "--key", "/etc/valkey/tls/tls.key", "-c"}
	if got := Args(secure, "", false, "-c"); !slices.Equal(got, want) {
		t.Errorf("TLS without a password: %q", got)
	}
}
