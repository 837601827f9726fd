package nodecli

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// Target is one Valkey node, as valkey-cli inside its pod reaches it.
type Target struct {
	Pod string
	// IP is the pod's IP: a node binds to it only, not to 127.0.0.1.
	IP string
	// TLS: the pod accepts TLS (its valkey.fsm.dev/tls annotation), so valkey-cli uses it with
	// the pod's own certificate, as the pod's readiness probe does. In a Cluster topology the
	// nodes then announce their TLS port, so redirections need TLS too.
	TLS bool
}

// TargetOf reads the pod of cluster and checks valkey-cli can run in it.
func TargetOf(ctx context.Context, core kubernetes.Interface, namespace, cluster, pod string) (Target, error) {
	p, err := core.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return Target{}, fmt.Errorf("pod %s/%s: %w", namespace, pod, err)
	}
	return TargetOfPod(p, cluster)
}

// TargetOfPod is TargetOf for a pod already read. A pod of another cluster is refused: the
// session would send this cluster's password to it.
func TargetOfPod(p *corev1.Pod, cluster string) (Target, error) {
	if got := p.Labels[kube.LabelCluster]; got != cluster {
		return Target{}, fmt.Errorf("pod %s/%s is not a pod of ValkeyCluster %s (its %s label is %q)", p.Namespace, p.Name, cluster, kube.LabelCluster, got)
	}
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return Target{}, fmt.Errorf("pod %s/%s is %s, not running with an IP", p.Namespace, p.Name, p.Status.Phase)
	}
	return Target{Pod: p.Name, IP: p.Status.PodIP, TLS: p.Annotations[kube.AnnotationTLS] != ""}, nil
}

// Args is the valkey-cli command line for t as user (never with a password: --askpass reads
// it from stdin), followed by extra.
func Args(t Target, user string, askPassword bool, extra ...string) []string {
	args := []string{"valkey-cli", "-h", t.IP}
	if t.TLS {
		args = append(args, "-p", strconv.Itoa(kube.TLSPort), "--tls",
			"--cacert", kube.TLSDir+"/ca.crt", "--cert", kube.TLSDir+"/tls.crt", "--key", kube.TLSDir+"/tls.key")
	} else {
		args = append(args, "-p", strconv.Itoa(kube.Port))
	}
	if user != "" {
		args = append(args, "--user", user)
	}
	if askPassword {
		args = append(args, "--askpass")
	}
	return append(args, extra...)
}
