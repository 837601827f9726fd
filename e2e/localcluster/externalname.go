package localcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PointServiceAtPod turns Service ns/name into an ExternalName naming the address of the first
// Ready pod its selector picks. The local cluster's API server refuses loopback Endpoints, so
// a selector Service has none, and the API server's aggregation layer considers an APIService
// behind it unavailable; an ExternalName Service it resolves by name (here an address) and
// proxies to. Used for the operator's journal API (the chart's APIService). A pod that comes
// back with another address, or a selector that picks another pod (the operator's journal
// Service follows the leader), needs this again with the same selector. It waits (until ctx
// ends) for a pod to pick.
func (c *Cluster) PointServiceAtPod(ctx context.Context, ns, name string, selector map[string]string) error {
	cs := c.Clientset()
	svc, err := cs.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if selector == nil {
		selector = svc.Spec.Selector
	}
	ip := ""
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: selector})})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
					ip = p.Status.PodIP
				}
			}
		}
		return ip != "", nil
	})
	if err != nil {
		return &noReadyPodError{ns: ns, name: name}
	}
	svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, ip
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy, svc.Spec.Selector = "", nil, nil, nil, nil
	_, err = cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
	return err
}

type noReadyPodError struct{ ns, name string }

func (e *noReadyPodError) Error() string {
	return "no Ready pod with an address for Service " + e.ns + "/" + e.name
}
