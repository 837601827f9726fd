package version

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// selector is the label the operator's chart puts on its workload, and the Recommended Labels'
// name any other installation would use.
const selector = "app.kubernetes.io/name=valkey-operator"

// operatorContainer is the chart's name for the operator's container; a workload of other
// making is shown by its first container.
const operatorContainer = "operator"

// Operator is one workload that runs the operator.
type Operator struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Image is the operator container's image as the workload asks for it.
	Image string `json:"image"`
}

// FindOperators lists the operator's workloads in every namespace. Both Deployments and
// StatefulSets are searched: the chart runs the operator as a StatefulSet (its journal is on a
// claim), other installations commonly as a Deployment. An error says why the cluster could not
// be asked (no kubeconfig, unreachable, not allowed); it is for printing, not for failing.
func FindOperators(ctx context.Context, flags *kube.Flags) ([]Operator, error) {
	clients, err := flags.NewClients()
	if err != nil {
		return nil, err
	}
	opts := metav1.ListOptions{LabelSelector: selector}
	var out []Operator
	deps, err := clients.Core.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		out = append(out, Operator{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, Image: imageOf(d.Spec.Template.Spec.Containers)})
	}
	sets, err := clients.Core.AppsV1().StatefulSets(metav1.NamespaceAll).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range sets.Items {
		out = append(out, Operator{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, Image: imageOf(s.Spec.Template.Spec.Containers)})
	}
	slices.SortFunc(out, func(a, b Operator) int {
		return strings.Compare(a.Namespace+"/"+a.Kind+"/"+a.Name, b.Namespace+"/"+b.Kind+"/"+b.Name)
	})
	return out, nil
}

func imageOf(containers []corev1.Container) string {
	for _, c := range containers {
		if c.Name == operatorContainer {
			return c.Image
		}
	}
	if len(containers) > 0 {
		return containers[0].Image
	}
	return "(no container)"
}
