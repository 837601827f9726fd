package charts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// renderNotes renders the valkey-cluster chart's NOTES.txt with values.
func renderNotes(t *testing.T, values string) string {
	t.Helper()
	return renderChartNotes(t, "valkey-cluster", values)
}

// renderChartNotes renders a chart's NOTES.txt with values (and more helm template
// arguments: --api-versions). helm template leaves the notes out and helm install needs a
// cluster, so the test renders a copy of the chart in which the notes are a ConfigMap's data
// (tpl of the same file, with the same values and release).
func renderChartNotes(t *testing.T, chart, values string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chart)
	if err := os.CopyFS(dir, os.DirFS(chart)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "templates", "NOTES.txt"), filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	const tmpl = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ tpl (.Files.Get \"notes.txt\") . | quote }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "notes.yaml"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, append([]string{"template", "x", dir, "--namespace", "shop", "--kube-version", kubeVersion(t),
		"--values", valuesFile(t, values), "--show-only", "templates/notes.yaml"}, args...)...)
	if err != nil {
		t.Fatalf("rendering the notes: %v\n%s", err, out)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatalf("the rendered notes: %v\n%s", err, out)
	}
	return cm.Data["notes"]
}

// TestTheClusterChartNotesFollowTheValues: the notes printed by helm install say where the
// password is (your Secret with its key, or the generated one) and that TLS is served beside
// plain TCP, reading the v1beta1 fields the chart writes (auth.passwordSecretRef, tls.mode
// PlainAndTLS).
func TestTheClusterChartNotesFollowTheValues(t *testing.T) {
	for _, c := range []struct {
		values string
		want   []string
		not    []string
	}{
		{`{}`, []string{"in the Secret x-auth, key password"}, []string{"6380"}},
		{`spec: {auth: {passwordSecretRef: {name: mine, key: pw}}}`, []string{"your Secret mine (key pw)", "get secret mine -n shop -o jsonpath='{.data.pw}'"}, []string{"x-auth"}},
		{`spec: {tls: {mode: PlainAndTLS, secretRef: {name: x-tls}}}`, []string{"TLS is served on port 6380 as well (tls.mode PlainAndTLS)", "x.shop.svc:6379"}, nil},
		{`spec: {tls: {mode: TLSOnly, secretRef: {name: x-tls}}}`, []string{"x.shop.svc:6380 (TLS only)"}, []string{"as well"}},
		{`spec: {topology: Sentinel}`, []string{"x-sentinel.shop.svc:26379, group mymaster"}, []string{"spreads reads"}},
		{`{}`, nil, []string{"sentinel"}},
	} {
		notes := renderNotes(t, c.values)
		for _, w := range c.want {
			if !strings.Contains(notes, w) {
				t.Errorf("with %s the notes do not say %q:\n%s", c.values, w, notes)
			}
		}
		for _, n := range c.not {
			if strings.Contains(notes, n) {
				t.Errorf("with %s the notes say %q:\n%s", c.values, n, notes)
			}
		}
	}
}
