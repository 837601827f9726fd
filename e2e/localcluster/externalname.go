package localcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PointServiceAtPod turns Service ns/name into an ExternalName naming the address of the first
// Ready pod its selector picks. The local cluster's API server refuses loopback Endpoints, so
// a selector Service has none, and the API server's aggregation layer considers an APIService
// behind it unavailable; an ExternalName Service it resolves by name (here an address) and
// proxies to. Used for the operator's journal API (the chart's APIService). A pod that comes
// back with another address needs this again.
func (c *Cluster) PointServiceAtPod(ctx context.Context, ns, name string) error {
	cs := c.Clientset()
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})})
	if err != nil {
		return err
	}
	ip := ""
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
				ip = p.Status.PodIP
			}
		}
	}
	if ip == "" {
		return &noReadyPodError{ns: ns, name: name}
	}
	svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, ip
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy, svc.Spec.Selector = "", nil, nil, nil, nil
	_, err = cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
	return err
}

type noReadyPodError struct{ ns, name string }

func (e *noReadyPodError) Error() string {
	return "no Ready pod with an address behind Service " + e.ns + "/" + e.name
}
