package charts

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// operatorPod renders the operator chart with values (none: the defaults) and returns its
// StatefulSet's pod template and its ServiceAccount.
func operatorPod(t *testing.T, values ...string) (corev1.PodSpec, corev1.ServiceAccount) {
	t.Helper()
	out, err := render(t, "valkey-operator", values...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var sts appsv1.StatefulSet
	var sa corev1.ServiceAccount
	for _, o := range objects(t, out) {
		switch o.Kind {
		case "StatefulSet":
			err = yaml.Unmarshal(o.raw, &sts)
		case "ServiceAccount":
			err = yaml.Unmarshal(o.raw, &sa)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(sts.Spec.Template.Spec.Containers) != 1 || sa.Name == "" {
		t.Fatalf("no operator StatefulSet with one container, or no ServiceAccount:\n%s", out)
	}
	return sts.Spec.Template.Spec, sa
}

// TestTheOperatorsCloudIdentityIsOptIn: by default the operator may not lend its identity to
// backup stores and its pod carries only the chart's own settings; the values for IRSA, Pod
// Identity and web identity federation (the flag, ServiceAccount annotations, environment,
// volumes) reach the pod as given.
func TestTheOperatorsCloudIdentityIsOptIn(t *testing.T) {
	pod, sa := operatorPod(t)
	c := pod.Containers[0]
	if slices.Contains(c.Args, "--backup-ambient-credentials") || len(sa.Annotations) != 0 || len(c.EnvFrom) != 0 {
		t.Errorf("defaults: args %v, ServiceAccount annotations %v, envFrom %v", c.Args, sa.Annotations, c.EnvFrom)
	}

	pod, sa = operatorPod(t, filepath.Join("valkey-operator", "ci", "full-values.yaml"))
	c = pod.Containers[0]
	if !slices.Contains(c.Args, "--backup-ambient-credentials") {
		t.Errorf("backup.ambientCredentials: true, args %v", c.Args)
	}
	if got := sa.Annotations["eks.amazonaws.com/role-arn"]; got != "arn:aws:iam::111122223333:role/valkey-backups" {
		t.Errorf("the ServiceAccount's role-arn annotation is %q", got)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "AWS_REGION" }); i < 0 || c.Env[i].Value != "eu-west-1" || c.Env[0].Name != "POD_IP" {
		t.Errorf("env %v: want the chart's own first, then AWS_REGION=eu-west-1", c.Env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != "operator-proxy" {
		t.Errorf("envFrom %v", c.EnvFrom)
	}
	mount := corev1.VolumeMount{Name: "aws-token", MountPath: "/var/run/secrets/aws", ReadOnly: true}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return reflect.DeepEqual(m, mount) }) {
		t.Errorf("volume mounts %v lack %v", c.VolumeMounts, mount)
	}
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "aws-token" })
	if i < 0 || pod.Volumes[i].Projected == nil || pod.Volumes[i].Projected.Sources[0].ServiceAccountToken.Audience != "sts.amazonaws.com" {
		t.Errorf("volumes %v lack the projected token", pod.Volumes)
	}
}
