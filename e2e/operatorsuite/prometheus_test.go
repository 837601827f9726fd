package operatorsuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// TestPrometheusSeesTheFailoverAndTheNotReadyAlert: a real Prometheus, running as a pod,
// discovers the chart-installed operator through Kubernetes service discovery against the API
// server (role pod: the API server here refuses loopback Endpoints), scrapes its metrics over
// HTTPS with its ServiceAccount's token (bound to the chart's metrics-reader ClusterRole) and
// evaluates the chart's own alerting rules (files/alerts.yaml). When the primary's node stops,
// Prometheus's own API shows ValkeyClusterNotReady fire, the failover counted, and the alert
// resolve once the new primary serves. The rule's `for` is shortened to 0 s so that it fires
// within the failover; promtool's tests (internal/monitoring) cover the shipped durations.
func TestPrometheusSeesTheFailoverAndTheNotReadyAlert(t *testing.T) {
	if cl == nil {
		t.Skip("no local cluster")
	}
	const release, opNS = "vo-prom", "vo-prom"
	watched, promNS := cl.Namespace(t), cl.Namespace(t)
	// The observers (the operator and Prometheus) run on one node and the Valkey pods on the
	// others, so that the node stopped below is never the observers'.
	observers := cl.NodeNames()[0]
	helm(t, "install", release, "../../charts/valkey-operator", "--namespace", opNS, "--create-namespace",
		"--set", "nodeSelector.kubernetes\\.io/hostname="+observers, "--set", "retryInterval=1s", "--set", "watchNamespaces={"+watched+"}",
		"--set", "journal.persistence.enabled=false", "--set", "journal.api.enabled=false", "--set", "replicas=1", "--set", "crds.enabled=false", "--wait", "--timeout", "3m")
	t.Cleanup(func() {
		helm(t, "uninstall", release, "--namespace", opNS, "--wait", "--timeout", "2m")
	})
	ctx := ctxFor(t, 8*time.Minute)
	ops, err := cl.Clientset().CoreV1().Pods(opNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=valkey-operator"})
	if err != nil || len(ops.Items) != 1 || ops.Items[0].Spec.NodeName != observers {
		t.Fatalf("want the operator's one pod on %s: %v, %v", observers, ops, err)
	}
	prom := startPrometheus(t, ctx, promNS, opNS, release+"-metrics-reader", observers)

	// The operator is a discovered, healthy target.
	promEventually(t, ctx, 90*time.Second, "the operator is a target that is up", func() (bool, string) {
		targets, err := prom.Targets(ctx)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, tg := range targets.Active {
			seen = append(seen, fmt.Sprintf("%s %s %s", tg.ScrapeURL, tg.Health, tg.LastError))
			if tg.Labels["job"] == "valkey-operator" && tg.Health == promv1.HealthGood {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})

	// A primary and a replica, one on each of the other nodes.
	watchedCluster := newCluster(watched, "watched", v1alpha1.TopologyReplication, 2)
	watchedCluster.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{observers}}}}},
	}}}
	if err := k.Create(ctx, watchedCluster); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, watched, "watched", 3*time.Minute, "Steady with 2 ready", steadyWith(2))
	mine := fmt.Sprintf(`{namespace=%q,cluster="watched"}`, watched)
	promEventually(t, ctx, time.Minute, "Prometheus has the cluster Ready", func() (bool, string) {
		v, err := promValue(ctx, prom, "valkey_operator_cluster_ready"+mine)
		return err == nil && v == 1, fmt.Sprint(v, err)
	})
	// The rule was last evaluated maybe before that scrape, while the cluster bootstrapped (the
	// test's rule fires at once, for 0s): the alert settles once an evaluation sees it Ready.
	promEventually(t, ctx, time.Minute, "ValkeyClusterNotReady inactive before anything failed", func() (bool, string) {
		a, err := alertOf(ctx, prom, "ValkeyClusterNotReady", watched)
		return err == nil && a == nil, fmt.Sprintf("%+v, %v", a, err)
	})

	oldPrimary := vc.Status.Primary
	pod, err := cl.Clientset().CoreV1().Pods(watched).Get(ctx, oldPrimary, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.StopNode(ctx, pod.Spec.NodeName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.StartNode(context.Background(), pod.Spec.NodeName) })
	stopped := time.Now()
	promEventually(t, ctx, 2*time.Minute, "ValkeyClusterNotReady fires", func() (bool, string) {
		a, err := alertOf(ctx, prom, "ValkeyClusterNotReady", watched)
		return err == nil && a != nil && a.State == promv1.AlertStateFiring, fmt.Sprint(a, err)
	})
	fired := time.Since(stopped)
	vc = waitFor(t, watched, "watched", 2*time.Minute, "a new primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.Primary != "" && vc.Status.Primary != oldPrimary
	})
	promEventually(t, ctx, time.Minute, "the failover counted", func() (bool, string) {
		n, err := promValue(ctx, prom, "valkey_operator_failovers_total"+mine)
		c, err2 := promValue(ctx, prom, "valkey_operator_failover_duration_seconds_count"+mine)
		return err == nil && err2 == nil && n == 1 && c == 1, fmt.Sprint(n, c, err, err2)
	})
	promEventually(t, ctx, time.Minute, "ValkeyClusterNotReady resolves", func() (bool, string) {
		a, err := alertOf(ctx, prom, "ValkeyClusterNotReady", watched)
		return err == nil && a == nil, fmt.Sprint(a, err)
	})
	t.Logf("through Prometheus: ValkeyClusterNotReady fired %s after the node stopped, the failover to %s counted, the alert resolved", fired.Round(100*time.Millisecond), vc.Status.Primary)
}

// startPrometheus runs Prometheus as a pod on node in ns with a ServiceAccount allowed to list the pods
// of opNS (its service discovery) and to read the operator's metrics (metricsReader), the
// chart's alerting rules and a 1 s scrape and evaluation interval, and returns a client of its
// API once it is ready.
func startPrometheus(t *testing.T, ctx context.Context, ns, opNS, metricsReader, node string) promv1.API {
	t.Helper()
	cs := cl.Clientset()
	_ = serviceAccountToken(t, ns, "prometheus", metricsReader)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-discovery", Namespace: opNS},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := cs.RbacV1().Roles(opNS).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-discovery", Namespace: opNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}
	if _, err := cs.RbacV1().RoleBindings(opNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [/etc/prometheus/alerts.yaml]
scrape_configs:
  - job_name: valkey-operator
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token}
    kubernetes_sd_configs:
      - role: pod
        namespaces: {names: [%s]}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name]
        regex: valkey-operator
        action: keep
      - source_labels: [__meta_kubernetes_pod_container_port_name]
        regex: metrics
        action: keep
`, opNS)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns},
		Data:       map[string]string{"prometheus.yml": config, "alerts.yaml": chartAlertsWithShortFor(t, "ValkeyClusterNotReady", "0s")},
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns},
		Spec: corev1.PodSpec{
			ServiceAccountName: "prometheus",
			NodeSelector:       map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{
				Name:  "prometheus",
				Image: localcluster.PrometheusImage + ":v3.16.0",
				Args: []string{"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus",
					"--web.listen-address=$(POD_IP):9090"},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/prometheus"},
					{Name: "data", MountPath: "/prometheus"},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/-/ready", Port: intstr.FromInt32(9090)}},
					PeriodSeconds: 1,
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.PodIP != "" && podReady(p) {
			ip = p.Status.PodIP
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus is not ready: %v %+v", err, p.Status)
		}
	}
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + ip + ":9090"})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(c)
}

// podReady reports the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// chartAlertsWithShortFor is the operator chart's files/alerts.yaml (a Prometheus rule file)
// with the `for` of the alert named shortened to d.
func chartAlertsWithShortFor(t *testing.T, alert, d string) string {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "charts", "valkey-operator", "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r["alert"] == alert {
				r["for"], found = d, true
			}
		}
	}
	if !found {
		t.Fatalf("the chart has no alert %s", alert)
	}
	out, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// promEventually polls cond every 500 ms until it holds, failing the test with cond's last
// word after d.
func promEventually(t *testing.T, ctx context.Context, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(500 * time.Millisecond) {
		var ok bool
		if ok, last = cond(); ok {
			return
		}
	}
	t.Fatalf("%s: not within %s (last: %s)", what, d, last)
}

// promValue is the value of an instant query that must return one series.
func promValue(ctx context.Context, prom promv1.API, query string) (float64, error) {
	v, _, _, err := prom.Query(ctx, query, time.Now())
	if err != nil {
		return 0, err
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		return 0, fmt.Errorf("%s: %v", query, v)
	}
	return float64(vec[0].Value), nil
}

// alertOf is the alert named for the cluster's namespace as Prometheus's alerts API lists it
// (pending or firing), nil when it is not active.
func alertOf(ctx context.Context, prom promv1.API, name, ns string) (*promv1.Alert, error) {
	res, err := prom.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	for i, a := range res.Alerts {
		if string(a.Labels["alertname"]) == name && string(a.Labels["namespace"]) == ns {
			return &res.Alerts[i], nil
		}
	}
	return nil, nil
}
