package operatorsuite

import (
	"context"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TestDayOneKnobsReachThePodsAndServices: a v1beta1 cluster with a pull secret, its own pod
// labels and annotations, a PriorityClass, a ServiceAccount and NodePort client Services with
// an annotation runs pods that carry each (as the API server holds them) and Services of that
// type, and takes writes. Changing a pod label rolls the pods (it is part of the revision),
// every pod gets the new value and no acknowledged write is lost; switching the Services back
// to ClusterIP changes them in place, keeping their cluster IP, and restarts no pod.
func TestDayOneKnobsReachThePodsAndServices(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)

	class := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "valkey-" + ns}, Value: 100000}
	if err := k.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), class) })
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "valkey-data"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry-creds"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}},
	} {
		if err := k.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	vc := &v1beta1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "knobs"}, Spec: v1beta1.ValkeyClusterSpec{
		Topology: v1beta1.TopologyReplication,
		Replicas: ptr.To(int32(2)),
		// Never is no default of Kubernetes' (IfNotPresent is, for a tagged image): seen on a
		// pod, it came from the spec. The local node agent runs images from its own store.
		ImagePullPolicy:    corev1.PullNever,
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "registry-creds"}},
		PodLabels:          map[string]string{"team": "cart", "tier": "data"},
		PodAnnotations:     map[string]string{"example.com/scrape": "true"},
		PriorityClassName:  class.Name,
		ServiceAccountName: "valkey-data",
		Service:            &v1beta1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"example.com/lb": "internal"}},
	}}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	steady := waitFor(t, ns, "knobs", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	checkKnobPods(t, ns, map[string]string{"team": "cart", "tier": "data"}, class)
	names := kube.NamesOf(valkeyapi.HubOf(steady))
	var nodePortIP string
	for _, name := range []string{names.Client, names.Replicas} {
		svc := service(t, ns, name)
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Annotations["example.com/lb"] != "internal" || svc.Spec.Ports[0].NodePort == 0 {
			t.Fatalf("Service %s: type %s, annotations %v, ports %+v", name, svc.Spec.Type, svc.Annotations, svc.Spec.Ports)
		}
		if name == names.Client {
			nodePortIP = svc.Spec.ClusterIP
		}
	}
	if headless := service(t, ns, names.Headless); headless.Spec.ClusterIP != corev1.ClusterIPNone || headless.Annotations["example.com/lb"] != "" {
		t.Fatalf("the headless Service took the client Services' knobs: %+v", headless)
	}

	// A pod label is part of the revision: the pods roll, each primary last after handing its
	// role over, while a client writes all along.
	c := writable(t, steady)
	before := podRevisions(t, ns)
	w := startWriter(ctx, c, "knobs")
	updateBeta(t, ctx, ns, "knobs", func(s *v1beta1.ValkeyClusterSpec) { s.PodLabels["team"] = "checkout" })
	rolled := waitFor(t, ns, "knobs", 3*time.Minute, "rolled and Steady", everyPodRestarted(t, ns, before, 3))
	sawRolling := false
	for _, h := range rolled.Status.History {
		sawRolling = sawRolling || h.To == v1alpha1.StateRolling
	}
	if !sawRolling {
		t.Fatalf("a changed pod label restarted the pods but history shows no Rolling:\n%s", summary(rolled))
	}
	lost, acked := w.lost(t, writable(t, rolled))
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost while a pod label rolled the pods:\n%s", lost, acked, summary(rolled))
	}
	checkKnobPods(t, ns, map[string]string{"team": "checkout", "tier": "data"}, class)
	t.Logf("pod label changed: every pod rolled, %d writes acknowledged, none lost", acked)

	// The Services' type and annotations change in place: no pod restarts, the cluster IP
	// stays, the annotation dropped from the spec leaves and one written by someone else (a
	// cloud's controller) stays.
	before = podRevisions(t, ns)
	patch := client.MergeFrom(service(t, ns, names.Client))
	cloud := service(t, ns, names.Client)
	cloud.Annotations["cloud.example.com/id"] = "lb-7"
	if err := k.Patch(ctx, cloud, patch); err != nil {
		t.Fatal(err)
	}
	updateBeta(t, ctx, ns, "knobs", func(s *v1beta1.ValkeyClusterSpec) {
		s.Service = &v1beta1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Annotations: map[string]string{"example.com/dns": "cache"}}
	})
	waitForService(t, ctx, ns, names.Client, func(svc *corev1.Service) bool { return svc.Spec.Type == corev1.ServiceTypeClusterIP })
	svc := service(t, ns, names.Client)
	if svc.Spec.ClusterIP != nodePortIP || svc.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("switched to ClusterIP: cluster IP %s (was %s), ports %+v", svc.Spec.ClusterIP, nodePortIP, svc.Spec.Ports)
	}
	if _, ok := svc.Annotations["example.com/lb"]; ok || svc.Annotations["example.com/dns"] != "cache" || svc.Annotations["cloud.example.com/id"] != "lb-7" {
		t.Fatalf("annotations after the spec replaced example.com/lb with example.com/dns: %v", svc.Annotations)
	}
	writable(t, get(t, ns, "knobs"))
	if after := podRevisions(t, ns); !maps.Equal(before, after) {
		t.Fatalf("a Service type change restarted pods: %v -> %v", before, after)
	}
}

// checkKnobPods checks every pod of the namespace as the API server holds it: the labels,
// the annotation, the pull secret and policy, the PriorityClass (resolved by the API server's
// Priority admission into the pod's priority) and the ServiceAccount without its token.
func checkKnobPods(t *testing.T, ns string, labels map[string]string, class *schedulingv1.PriorityClass) {
	t.Helper()
	var pods corev1.PodList
	if err := k.List(ctxFor(t, 10*time.Second), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("%d pods, want 3", len(pods.Items))
	}
	for _, p := range pods.Items {
		for key, v := range labels {
			if p.Labels[key] != v {
				t.Errorf("pod %s: label %s=%q, want %q", p.Name, key, p.Labels[key], v)
			}
		}
		if p.Labels["app.kubernetes.io/name"] != "valkey" || p.Labels[kube.LabelCluster] != "knobs" {
			t.Errorf("pod %s lost the operator's labels: %v", p.Name, p.Labels)
		}
		if p.Annotations["example.com/scrape"] != "true" || p.Annotations[kube.AnnotationRevision] == "" {
			t.Errorf("pod %s: annotations %v", p.Name, p.Annotations)
		}
		if len(p.Spec.ImagePullSecrets) != 1 || p.Spec.ImagePullSecrets[0].Name != "registry-creds" || p.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
			t.Errorf("pod %s: pull secrets %v, pull policy %s", p.Name, p.Spec.ImagePullSecrets, p.Spec.Containers[0].ImagePullPolicy)
		}
		if p.Spec.PriorityClassName != class.Name || ptr.Deref(p.Spec.Priority, 0) != class.Value {
			t.Errorf("pod %s: priorityClassName %q priority %v, want %s (%d)", p.Name, p.Spec.PriorityClassName, p.Spec.Priority, class.Name, class.Value)
		}
		if p.Spec.ServiceAccountName != "valkey-data" || ptr.Deref(p.Spec.AutomountServiceAccountToken, true) {
			t.Errorf("pod %s: serviceAccountName %q, automount %v", p.Name, p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken)
		}
		for _, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access") {
				t.Errorf("pod %s mounts the service account's token (%s)", p.Name, v.Name)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func service(t *testing.T, ns, name string) *corev1.Service {
	t.Helper()
	var svc corev1.Service
	if err := k.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
		t.Fatal(err)
	}
	return &svc
}

func waitForService(t *testing.T, ctx context.Context, ns, name string, cond func(*corev1.Service) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var svc corev1.Service
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err == nil && cond(&svc) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("Service %s/%s not as expected within a minute: %+v", ns, name, service(t, ns, name))
}

// updateBeta changes a cluster's spec through v1beta1, reading it again on a conflict (the
// operator writes status all the time).
func updateBeta(t *testing.T, ctx context.Context, ns, name string, change func(*v1beta1.ValkeyClusterSpec)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vc v1beta1.ValkeyCluster
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
			return err
		}
		change(&vc.Spec)
		return k.Update(ctx, &vc)
	})
	if err != nil {
		t.Fatal(err)
	}
}
