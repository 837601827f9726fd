package charts

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// monitoringOn turns on every monitoring object of the operator chart.
const monitoringOn = `metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}, dashboard: {enabled: true}}`

// prometheusOperatorKinds are the API versions helm template is told the cluster serves when
// the Prometheus Operator's CRDs are installed.
var prometheusOperatorKinds = []string{"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}

// TestTheMonitoringObjectsRenderOnlyWhereTheirKindsAreServed: a ServiceMonitor and a
// PrometheusRule asked for are rendered only when the cluster serves their kinds (helm
// template: --api-versions), and otherwise the notes say that they were not installed and
// why; the dashboard is a ConfigMap, which every cluster serves.
func TestTheMonitoringObjectsRenderOnlyWhereTheirKindsAreServed(t *testing.T) {
	kinds := func(out string) map[string]bool {
		got := map[string]bool{}
		for _, o := range objects(t, out) {
			got[o.Kind+"/"+o.Metadata.Name] = true
		}
		return got
	}
	values := valuesFile(t, monitoringOn)
	out, err := render(t, "valkey-operator", values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	got := kinds(out)
	if got["ServiceMonitor/x"] || got["PrometheusRule/x"] || !got["ConfigMap/x-dashboard"] {
		t.Errorf("without the Prometheus Operator's kinds: ServiceMonitor %v, PrometheusRule %v, dashboard %v",
			got["ServiceMonitor/x"], got["PrometheusRule/x"], got["ConfigMap/x-dashboard"])
	}
	notes := renderChartNotes(t, "valkey-operator", monitoringOn)
	for _, want := range []string{
		"NOT INSTALLED: the ServiceMonitor (metrics.serviceMonitor.enabled). This cluster does not serve\nmonitoring.coreos.com/v1 ServiceMonitor",
		"NOT INSTALLED: the PrometheusRule (metrics.prometheusRule.enabled). This cluster does not serve\nmonitoring.coreos.com/v1 PrometheusRule",
		"the Grafana dashboard in ConfigMap x-dashboard",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %q:\n%s", want, notes)
		}
	}

	out, err = helm(t, append([]string{"template", "x", "valkey-operator", "--namespace", "shop", "--kube-version", kubeVersion(t), "--values", values}, prometheusOperatorKinds...)...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	got = kinds(out)
	if !got["ServiceMonitor/x"] || !got["PrometheusRule/x"] {
		t.Errorf("with the Prometheus Operator's kinds served, rendered %v", got)
	}
	notes = renderChartNotes(t, "valkey-operator", monitoringOn, prometheusOperatorKinds...)
	if strings.Contains(notes, "NOT INSTALLED") || !strings.Contains(notes, "a ServiceMonitor x") || !strings.Contains(notes, "a PrometheusRule x") {
		t.Errorf("with the kinds served the notes say:\n%s", notes)
	}
}

// TestTheOperatorChartInstallsWithoutThePrometheusOperator installs the operator chart with
// helm into a real API server that does not serve the Prometheus Operator's kinds, with the
// defaults and then with every monitoring object turned on: both install (helm upgrade), the
// notes say what was left out, and once the kinds are served the same upgrade creates them.
// The notes' first ValkeyCluster is one the API server accepts.
func TestTheOperatorChartInstallsWithoutThePrometheusOperator(t *testing.T) {
	env, cfg := server.Start(t)
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "chart-installer", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns, release = "vo-monitoring", "vo-monitoring"
	// The package's server owns the CRDs (crds.enabled=false); the journal's APIService would
	// point at a Service without endpoints, which fails helm's own discovery afterwards.
	base := []string{"valkey-operator", "--namespace", ns, "--kubeconfig", kcPath,
		"--set", "crds.enabled=false", "--set", "journal.api.enabled=false"}
	run := func(args ...string) string {
		t.Helper()
		out, err := helm(t, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	notes := run(append([]string{"install", release, "--create-namespace"}, base...)...)
	t.Cleanup(func() { _, _ = helm(t, "uninstall", release, "--namespace", ns, "--kubeconfig", kcPath) })
	if strings.Contains(notes, "NOT INSTALLED") {
		t.Errorf("with the defaults the notes say something was not installed:\n%s", notes)
	}

	values := valuesFile(t, monitoringOn)
	notes = run(append([]string{"upgrade", release, "--values", values}, base...)...)
	if !strings.Contains(notes, "NOT INSTALLED: the ServiceMonitor") || !strings.Contains(notes, "NOT INSTALLED: the PrometheusRule") {
		t.Errorf("the notes of the upgrade do not say the ServiceMonitor and PrometheusRule were left out:\n%s", notes)
	}
	ctx := context.Background()
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := dyn.Resource(cm).Namespace(ns).Get(ctx, release+"-dashboard", metav1.GetOptions{}); err != nil {
		t.Errorf("the dashboard's ConfigMap: %v", err)
	}
	checkFirstClusterIsAccepted(t, dyn, notes)

	// The Prometheus Operator's CRDs arrive: the same values now bring its objects.
	crds := installMonitoringCRDs(t, cfg, dyn)
	run(append([]string{"upgrade", release, "--values", values}, base...)...)
	for _, gvr := range crds {
		if _, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, release, metav1.GetOptions{}); err != nil {
			t.Errorf("%s %s after the CRDs were installed: %v", gvr.Resource, release, err)
		}
	}
}

// checkFirstClusterIsAccepted creates the ValkeyCluster the notes show (the JSON between
// echo ' and ' | kubectl apply, as a shell passes it on whatever its indentation) as a
// server-side dry run.
func checkFirstClusterIsAccepted(t *testing.T, dyn dynamic.Interface, notes string) {
	t.Helper()
	_, rest, ok := strings.Cut(notes, "echo '")
	manifest, _, ok2 := strings.Cut(rest, "' | kubectl apply")
	if !ok || !ok2 {
		t.Fatalf("the notes show no first cluster:\n%s", notes)
	}
	var u unstructured.Unstructured
	if err := json.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("the notes' first cluster: %v\n%s", err, manifest)
	}
	gvr := schema.GroupVersionResource{Group: "valkey.fsm.dev", Version: "v1beta1", Resource: "valkeyclusters"}
	if _, err := dyn.Resource(gvr).Namespace("default").Create(context.Background(), &u,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}); err != nil {
		t.Errorf("the API server refuses the notes' first cluster: %v\n%s", err, manifest)
	}
}

// installMonitoringCRDs installs CRDs serving monitoring.coreos.com/v1 ServiceMonitor and
// PrometheusRule (the names, group and scope of the Prometheus Operator's; any content) and
// waits until discovery lists them, as helm asks; they are deleted when the test ends.
func installMonitoringCRDs(t *testing.T, cfg *rest.Config, dyn dynamic.Interface) []schema.GroupVersionResource {
	t.Helper()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	var out []schema.GroupVersionResource
	for kind, plural := range map[string]string{"ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"} {
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + ".monitoring.coreos.com"},
			"spec": map[string]any{
				"group": "monitoring.coreos.com", "scope": "Namespaced",
				"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		if _, err := dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		name := crd.GetName()
		t.Cleanup(func() { _ = dyn.Resource(crdGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		out = append(out, schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: plural})
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := dc.ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		return err == nil && len(list.APIResources) == len(out), nil
	})
	if err != nil {
		t.Fatalf("the monitoring CRDs are not served: %v", err)
	}
	return out
}
