package charts

import (
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestTheOperatorPodValuesReachTheStatefulSet: the values for the operator's pod (a private
// registry's pull Secrets, extra flags, pod labels and annotations, a PriorityClass) are in
// the StatefulSet's pod template as given; the extra flags come after the chart's own, so
// that one given twice (--retry-interval) takes the value of extraArgs; the selector labels
// stay the chart's whatever podLabels says. With the defaults there is none of them.
func TestTheOperatorPodValuesReachTheStatefulSet(t *testing.T) {
	pod, _ := operatorPod(t)
	if len(pod.ImagePullSecrets) != 0 || pod.PriorityClassName != "" {
		t.Errorf("defaults: imagePullSecrets %v, priorityClassName %q", pod.ImagePullSecrets, pod.PriorityClassName)
	}

	out, err := render(t, "valkey-operator", filepath.Join("valkey-operator", "ci", "full-values.yaml"))
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	sts := statefulSet(t, out)
	pod = sts.Spec.Template.Spec
	if len(pod.ImagePullSecrets) != 1 || pod.ImagePullSecrets[0].Name != "registry-example-com" {
		t.Errorf("imagePullSecrets %v", pod.ImagePullSecrets)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	meta := sts.Spec.Template.ObjectMeta
	if meta.Labels["team"] != "platform" || meta.Labels["app.kubernetes.io/name"] != "valkey-operator" || meta.Labels["app.kubernetes.io/instance"] != "x" {
		t.Errorf("pod labels %v: want team=platform beside the chart's selector labels", meta.Labels)
	}
	if meta.Annotations["prometheus.io/scrape"] != "false" {
		t.Errorf("pod annotations %v", meta.Annotations)
	}
	args := pod.Containers[0].Args
	chart := slices.Index(args, "--retry-interval=5s") // the chart's, from retryInterval
	extra := slices.Index(args, "--retry-interval=9s")
	if chart < 0 || extra < chart || !slices.Contains(args, "--backup-attempts=5") {
		t.Errorf("args %v: want extraArgs (--backup-attempts=5, --retry-interval=9s) after the chart's --retry-interval=5s", args)
	}
	if args[len(args)-1] != "--retry-interval=9s" {
		t.Errorf("args %v: extraArgs are not last", args)
	}
}

// statefulSet is the operator's StatefulSet among rendered manifests.
func statefulSet(t *testing.T, manifests string) appsv1.StatefulSet {
	t.Helper()
	var sts appsv1.StatefulSet
	for _, o := range objects(t, manifests) {
		if o.Kind == "StatefulSet" {
			if err := yaml.UnmarshalStrict(o.raw, &sts); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(sts.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("no operator StatefulSet with one container:\n%s", manifests)
	}
	return sts
}
