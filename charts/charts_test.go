package charts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

var charts = []string{"valkey-operator", "valkey-cluster"}

// helm runs the pinned helm (hack/helm.sh) with an empty configuration of its own and no
// cluster; it returns the combined output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "hack", "helm.sh"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(),
		"HELM_DATA_HOME="+t.TempDir(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubeVersion is the Kubernetes version the local cluster runs (e2e/kubebin/kube/go.mod):
// the charts are rendered for it.
func kubeVersion(t *testing.T) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "e2e", "kubebin", "kube", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v\d+\.\d+\.\d+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("e2e/kubebin/kube/go.mod requires no k8s.io/kubernetes version")
	}
	return string(m[1])
}

// render runs helm template for release x in namespace shop with the values files.
func render(t *testing.T, chart string, values ...string) (string, error) {
	t.Helper()
	args := []string{"template", "x", chart, "--namespace", "shop", "--kube-version", kubeVersion(t)}
	for _, v := range values {
		args = append(args, "--values", v)
	}
	return helm(t, args...)
}

// valuesFile writes values into a file of the test's (in a directory of its own: helm splits
// --values at commas, which test names have).
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chart-values")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// object is one rendered manifest.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
	raw  []byte
}

// objects splits helm template's output into its manifests.
func objects(t *testing.T, manifests string) []object {
	t.Helper()
	var out []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(manifests, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("a rendered manifest is not YAML: %v\n%s", err, doc)
		}
		if o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("a rendered manifest has no kind or name:\n%s", doc)
		}
		o.raw = []byte(doc)
		out = append(out, o)
	}
	return out
}

// TestTheChartsLintAndRender lints both charts (--strict: warnings fail) and renders them for
// the local cluster's Kubernetes version, with the defaults and with ci/full-values.yaml.
func TestTheChartsLintAndRender(t *testing.T) {
	for _, chart := range charts {
		for _, values := range [][]string{nil, {filepath.Join(chart, "ci", "full-values.yaml")}} {
			t.Run(fmt.Sprintf("%s %v", chart, values), func(t *testing.T) {
				args := []string{"lint", "--strict", chart, "--kube-version", kubeVersion(t)}
				for _, v := range values {
					args = append(args, "--values", v)
				}
				if out, err := helm(t, args...); err != nil {
					t.Fatalf("helm lint: %v\n%s", err, out)
				}
				out, err := render(t, chart, values...)
				if err != nil {
					t.Fatalf("helm template: %v\n%s", err, out)
				}
				if len(objects(t, out)) == 0 {
					t.Fatal("helm template rendered nothing")
				}
			})
		}
	}
}

// TestTheClusterChartFollowsTheOperatorsAppVersion: valkey-cluster's schema is generated from
// the CRDs of the operator release its appVersion names.
func TestTheClusterChartFollowsTheOperatorsAppVersion(t *testing.T) {
	appVersion := func(chart string) string {
		raw, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			AppVersion string `json:"appVersion"`
		}
		if err := yaml.Unmarshal(raw, &c); err != nil || c.AppVersion == "" {
			t.Fatalf("%s/Chart.yaml: no appVersion (%v)", chart, err)
		}
		return c.AppVersion
	}
	if op, vc := appVersion("valkey-operator"), appVersion("valkey-cluster"); op != vc {
		t.Errorf("valkey-cluster's appVersion is %s, the operator chart's %s", vc, op)
	}
}

// TestValuesWithTyposAreRefused: the generated schemas refuse a misspelt key, an unknown top
// level key or a wrong type at helm template (install, upgrade and lint check the same), naming
// the field; the maps that are Kubernetes' to judge stay open.
func TestValuesWithTyposAreRefused(t *testing.T) {
	acl := `{name: app, user: app, rules: ["+@read"], passwordSecretRefs: [{name: app-password}]`
	for i, c := range []struct {
		chart, values string
		want          []string // in the error; none: accepted
	}{
		{"valkey-cluster", `spec: {replica: 3}`, []string{"at '/spec': additional properties 'replica' not allowed"}},
		{"valkey-cluster", `acl: []`, []string{"at '': additional properties 'acl' not allowed"}},
		{"valkey-cluster", `spec: {replicas: "three"}`, []string{"at '/spec/replicas': got string, want integer"}},
		{"valkey-cluster", `spec: {storage: {sise: 2Gi}}`, []string{"at '/spec/storage': additional properties 'sise' not allowed"}},
		{"valkey-cluster", `spec: {backup: {store: {bucket: b, credentialsSecretRef: {name: s}, endpiont: "https://s3"}}}`, []string{"at '/spec/backup/store': additional properties 'endpiont' not allowed"}},
		{"valkey-cluster", `spec: {config: {databases: 32}}`, []string{"at '/spec/config/databases': got number, want string"}},
		{"valkey-cluster", `spec: {topology: cluster}`, []string{"at '/spec/topology': value must be one of 'Standalone', 'Replication', 'Sentinel', 'Cluster'"}},
		{"valkey-cluster", `spec: {resources: {limits: {memory: 2Gi}, request: {cpu: 1}}}`, []string{"at '/spec/resources': additional properties 'request' not allowed"}},
		{"valkey-cluster", `spec: {tolerations: [{key: k, efect: NoSchedule}]}`, []string{"at '/spec/tolerations/0': additional properties 'efect' not allowed"}},
		{"valkey-cluster", `acls: [` + acl + `, cluster: other}]`, []string{"at '/acls/0': additional properties 'cluster' not allowed"}},
		{"valkey-cluster", `acls: [` + acl + `, rule: ["+@all"]}]`, []string{"at '/acls/0': additional properties 'rule' not allowed"}},
		{"valkey-cluster", `acls: [{user: app, rules: ["+@read"], passwordSecretRefs: [{name: pw}]}]`, []string{"at '/acls/0': missing property 'name'"}},
		{"valkey-cluster", `name: Sessions`, []string{"at '/name'", "does not match pattern"}},
		{"valkey-cluster", `acls: [` + acl + `}, ` + acl + `}]`, []string{"acls: the name app is given twice"}},
		{"valkey-cluster", `acls: [` + acl + `}, {name: app2, user: app, rules: ["+@read"], passwordSecretRefs: [{name: pw}]}]`, []string{"acls: the user app is given twice (app and app2)"}},
		{"valkey-cluster", `{global: {anything: 1}, labels: {team: shop}, spec: {nodeSelector: {disk: ssd}}}`, nil},
		{"valkey-operator", `replica: 1`, []string{"at '': additional properties 'replica' not allowed"}},
		{"valkey-operator", `replicas: "two"`, []string{"at '/replicas': got string, want integer"}},
		{"valkey-operator", `metrics: {serviceMonitor: {enable: true}}`, []string{"at '/metrics/serviceMonitor': additional properties 'enable' not allowed"}},
		{"valkey-operator", `logLevel: verbose`, []string{"at '/logLevel': value must be one of 'debug', 'info', 'error'"}},
		{"valkey-operator", `journal: {persistence: {enabled: "no"}}`, []string{"at '/journal/persistence/enabled': got string, want boolean"}},
		{"valkey-operator", `imagePullSecrets: [regcred]`, []string{"at '/imagePullSecrets/0': got string, want object"}},
		{"valkey-operator", `extraArgs: [backup-attempts=5]`, []string{"at '/extraArgs/0'", "does not match pattern"}},
		{"valkey-operator", `podLabels: {team: 1}`, []string{"at '/podLabels/team': got number, want string"}},
		{"valkey-operator", `{global: {anything: 1}, podSecurityContext: {supplementalGroups: [1]}, nodeSelector: {disk: ssd}, metrics: {serviceMonitor: {labels: {release: p}}}}`, nil},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.chart, i), func(t *testing.T) {
			out, err := render(t, c.chart, valuesFile(t, c.values))
			if c.want == nil {
				if err != nil {
					t.Fatalf("%s refused: %v\n%s", c.values, err, out)
				}
				return
			}
			if err == nil {
				t.Fatalf("%s accepted:\n%s", c.values, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the refusal of %s does not say %q:\n%s", c.values, w, out)
				}
			}
		})
	}
	// A release name the API server would refuse as the cluster's name is refused too.
	if out, err := helm(t, "template", "9lives", "valkey-cluster", "--kube-version", kubeVersion(t)); err == nil || !strings.Contains(out, `the ValkeyCluster's name "9lives" must start with a letter`) {
		t.Errorf("release 9lives: %v\n%s", err, out)
	}
}

// clusterValues are the valkey-cluster chart's values as the tests read them.
type clusterValues struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Spec        map[string]any    `json:"spec"`
	ACLs        []map[string]any  `json:"acls"`
}

// TestTheClusterChartRendersTheValues: the ValkeyCluster is named, labelled and annotated as
// the values say and its spec is the values' spec, field for field; each ValkeyACL is its
// item without the name, with the cluster. Both are v1beta1, the version users write, and
// decode strictly into its Go types.
func TestTheClusterChartRendersTheValues(t *testing.T) {
	full := filepath.Join("valkey-cluster", "ci", "full-values.yaml")
	raw, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	var want clusterValues
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	out, err := render(t, "valkey-cluster", full)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var clusters, acls []object
	for _, o := range objects(t, out) {
		if o.APIVersion != v1beta1.SchemeGroupVersion.String() {
			t.Errorf("the chart renders %s %s as %s, want %s", o.Kind, o.Metadata.Name, o.APIVersion, v1beta1.SchemeGroupVersion)
		}
		switch o.Kind {
		case "ValkeyCluster":
			clusters = append(clusters, o)
		case "ValkeyACL":
			acls = append(acls, o)
		default:
			t.Errorf("the chart renders a %s", o.Kind)
		}
	}
	if len(clusters) != 1 || len(acls) != len(want.ACLs) {
		t.Fatalf("rendered %d ValkeyClusters and %d ValkeyACLs, want 1 and %d", len(clusters), len(acls), len(want.ACLs))
	}
	vc := clusters[0]
	if vc.Metadata.Name != want.Name || vc.Metadata.Namespace != "shop" {
		t.Errorf("the ValkeyCluster is %s/%s, want shop/%s", vc.Metadata.Namespace, vc.Metadata.Name, want.Name)
	}
	checkLabels(t, vc, want.Labels)
	if !reflect.DeepEqual(vc.Metadata.Annotations, want.Annotations) {
		t.Errorf("annotations %v, want %v", vc.Metadata.Annotations, want.Annotations)
	}
	if !reflect.DeepEqual(vc.Spec, want.Spec) {
		t.Errorf("the rendered spec differs from the values':\n%s", vc.raw)
	}
	var typed v1beta1.ValkeyCluster
	if err := yaml.UnmarshalStrict(vc.raw, &typed); err != nil {
		t.Errorf("the rendered ValkeyCluster is not one: %v", err)
	}
	for i, item := range want.ACLs {
		a := acls[i]
		spec := map[string]any{"cluster": want.Name}
		for k, v := range item {
			if k != "name" {
				spec[k] = v
			}
		}
		if a.Metadata.Name != item["name"] || a.Metadata.Namespace != "shop" || !reflect.DeepEqual(a.Spec, spec) {
			t.Errorf("ValkeyACL %d renders as\n%s\nwant name %v and spec %v", i, a.raw, item["name"], spec)
		}
		checkLabels(t, a, want.Labels)
		var typed v1beta1.ValkeyACL
		if err := yaml.UnmarshalStrict(a.raw, &typed); err != nil {
			t.Errorf("the rendered ValkeyACL %d is not one: %v", i, err)
		}
	}

	// The defaults: a ValkeyCluster named after the release, no spec (the API server's
	// defaults), no ValkeyACL.
	out, err = render(t, "valkey-cluster")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if objs := objects(t, out); len(objs) != 1 || objs[0].Kind != "ValkeyCluster" || objs[0].Metadata.Name != "x" || objs[0].Spec != nil {
		t.Errorf("with the defaults the chart renders:\n%s", out)
	}
}

func checkLabels(t *testing.T, o object, extra map[string]string) {
	t.Helper()
	for k, v := range map[string]string{"app.kubernetes.io/name": "valkey-cluster", "app.kubernetes.io/instance": "x", "app.kubernetes.io/managed-by": "Helm"} {
		if o.Metadata.Labels[k] != v {
			t.Errorf("%s %s: label %s is %q, want %q", o.Kind, o.Metadata.Name, k, o.Metadata.Labels[k], v)
		}
	}
	for k, v := range extra {
		if o.Metadata.Labels[k] != v {
			t.Errorf("%s %s: label %s is %q, want %q (values' labels)", o.Kind, o.Metadata.Name, k, o.Metadata.Labels[k], v)
		}
	}
}

// TestTheFullValuesAreFull: ci/full-values.yaml of each chart sets every value (the operator
// chart's values.yaml; every field of the ValkeyCluster's and ValkeyACL's specs down to the
// Kubernetes types), so the renders above cover a field as soon as it exists.
func TestTheFullValuesAreFull(t *testing.T) {
	read := func(path string) map[string]any {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	fullOperator := read(filepath.Join("valkey-operator", "ci", "full-values.yaml"))
	var missing []string
	walk(read(filepath.Join("valkey-operator", "values.yaml")), "", func(path string, _ any) bool {
		if !has(fullOperator, path) {
			missing = append(missing, "valkey-operator: "+path)
		}
		return true
	})

	fullCluster := read(filepath.Join("valkey-cluster", "ci", "full-values.yaml"))
	schema := read(filepath.Join("valkey-cluster", "values.schema.json"))
	props := schema["properties"].(map[string]any)
	for _, key := range slices.Sorted(mapKeys(props)) {
		if key != "global" && !has(fullCluster, key) {
			missing = append(missing, "valkey-cluster: "+key)
		}
	}
	// Kubernetes' own types are set, not every field of them; shards, sentinel (a Sentinel
	// topology runs no TLS yet), tls.secretRef and a restore from a store are exclusive with
	// what the file sets.
	kubernetesTypes := []string{"affinity", "tolerations", "topologySpreadConstraints", "resources", "nodeSelector", "config", "networkPolicy.from", "networkPolicy.operator"}
	exclusive := []string{"shards", "sentinel", "tls.secretRef", "restoreFrom.store", "restoreFrom.path"}
	walkSchema(props["spec"].(map[string]any), "", func(path string) bool {
		if slices.Contains(exclusive, path) {
			return false
		}
		if !has(fullCluster["spec"].(map[string]any), path) {
			missing = append(missing, "valkey-cluster: spec."+path)
		}
		return !slices.Contains(kubernetesTypes, path)
	})
	aclItem := props["acls"].(map[string]any)["items"].(map[string]any)
	for _, field := range slices.Sorted(mapKeys(aclItem["properties"].(map[string]any))) {
		set := false
		for _, item := range fullCluster["acls"].([]any) {
			_, ok := item.(map[string]any)[field]
			set = set || ok
		}
		if !set {
			missing = append(missing, "valkey-cluster: acls[]."+field)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ci/full-values.yaml does not set:\n%s", strings.Join(missing, "\n"))
	}
}

// walk calls f with the dotted path of every leaf of v (a non-empty map is not a leaf).
func walk(v map[string]any, prefix string, f func(path string, v any) bool) {
	for k, sub := range v {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		if m, ok := sub.(map[string]any); ok && len(m) > 0 {
			walk(m, path, f)
			continue
		}
		f(path, sub)
	}
}

// walkSchema calls f with the dotted path of every property under schema; f says whether to
// go into it.
func walkSchema(schema map[string]any, prefix string, f func(path string) bool) {
	props, _ := schema["properties"].(map[string]any)
	for k, sub := range props {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		if f(path) {
			walkSchema(sub.(map[string]any), path, f)
		}
	}
}

// has says whether the dotted path is set in v.
func has(v map[string]any, path string) bool {
	head, rest, deeper := strings.Cut(path, ".")
	sub, ok := v[head]
	if !ok || !deeper {
		return ok
	}
	m, ok := sub.(map[string]any)
	return ok && has(m, rest)
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
