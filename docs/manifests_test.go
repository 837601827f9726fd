package docs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/internal/celtesting"
	"github.com/valkey-fsm/valkey-operator/internal/testapiserver"
)

// One API server for the package with the chart's CRDs (both versions, v1beta1 stored) and the
// operator's conversion webhook, as a cluster runs them.
var server = testapiserver.Server{ServiceRange: "127.243.0.0/16", CRDDir: "../charts/valkey-operator/files/crds"}

func TestMain(m *testing.M) { testapiserver.Main(m, &server) }

// group is the API group whose manifests are checked; version is the one users write.
const (
	group   = "valkey.fsm.dev"
	version = "v1beta1"
	// oldVersion is the version a block may show only when its fence says so (```yaml
	// v1alpha1): the "before" of a migration example.
	oldVersion = "v1alpha1"
)

var resources = map[string]string{"ValkeyCluster": "valkeyclusters", "ValkeyBackup": "valkeybackups", "ValkeyACL": "valkeyacls"}

// notChecked are pages left out, with the reason: none now; an entry is for a page being
// rewritten, never for a manifest that should be fixed instead.
var notChecked = map[string]string{}

// TestEveryManifestInTheDocsIsAccepted extracts every ValkeyCluster, ValkeyBackup and
// ValkeyACL from the ```yaml blocks of README.md, docs/*.md, docs/development/*.md and the valkey-cluster chart's
// README, and from config/samples, and creates each (a server-side dry run, with unknown
// fields refused) against a real API server with the real CRDs. A manifest must be v1beta1,
// unless its block is fenced ```yaml v1alpha1 (the "before" of a migration example, which
// must then be valid v1alpha1). A failure names the file and line of the manifest.
func TestEveryManifestInTheDocsIsAccepted(t *testing.T) {
	_, cfg := server.Start(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := celtesting.Namespace(t, dyn)
	manifests := docManifests(t, "..")
	if len(manifests) == 0 {
		t.Fatal("no manifest found: the extraction is broken")
	}
	checked := map[string]int{}
	for _, m := range manifests {
		if err := create(dyn, ns, m); err != nil {
			t.Errorf("%s: %v", m.where, err)
			continue
		}
		checked[m.file]++
	}
	for _, file := range slices.Sorted(maps.Keys(checked)) {
		t.Logf("%s: %d manifests accepted", file, checked[file])
	}
}

// TestTheMigrationExamplesAreTheSameObjects: every v1alpha1 block ("before") is followed in its
// page by a v1beta1 block of the same kind and name ("after"), and both, created for real and
// read back as v1beta1, are the same object: the same spec once the operator's defaults are
// applied (v1beta1.SetDefaults), which is what the operator runs. A migration example that
// would change a running cluster (a count not moved by one, a volume size left to the new
// default) fails here.
func TestTheMigrationExamplesAreTheSameObjects(t *testing.T) {
	_, cfg := server.Start(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	manifests := docManifests(t, "..")
	pairs := 0
	for i, before := range manifests {
		if !before.old {
			continue
		}
		var after *manifest
		for j := i + 1; j < len(manifests) && manifests[j].file == before.file; j++ {
			m := manifests[j]
			if !m.old && m.obj.GetKind() == before.obj.GetKind() && m.obj.GetName() == before.obj.GetName() {
				after = &m
				break
			}
		}
		if after == nil {
			t.Errorf("%s: %s %s has no v1beta1 block of the same name after it", before.where, before.obj.GetKind(), before.obj.GetName())
			continue
		}
		pairs++
		old, err := storedAsHub(dyn, celtesting.Namespace(t, dyn), before)
		if err != nil {
			t.Errorf("%s: %v", before.where, err)
			continue
		}
		moved, err := storedAsHub(dyn, celtesting.Namespace(t, dyn), *after)
		if err != nil {
			t.Errorf("%s: %v", after.where, err)
			continue
		}
		if diff := sameObject(old, moved); diff != "" {
			t.Errorf("%s and %s are not the same %s (-before +after, as v1beta1 with the operator's defaults):\n%s", before.where, after.where, before.obj.GetKind(), diff)
		}
	}
	if pairs == 0 {
		t.Fatal("no migration example found: the extraction is broken")
	}
}

// storedAsHub creates a manifest in ns and reads it back as v1beta1.
func storedAsHub(dyn dynamic.Interface, ns string, m manifest) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(m.obj.GetAPIVersion())
	if err != nil {
		return nil, err
	}
	obj := m.obj.DeepCopy()
	obj.SetNamespace(ns)
	resource := resources[obj.GetKind()]
	ctx := context.Background()
	if _, err := dyn.Resource(gv.WithResource(resource)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
		return nil, fmt.Errorf("the API server refuses %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return dyn.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: resource}).Namespace(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
}

// sameObject compares the specs of two v1beta1 objects, a ValkeyCluster's with the operator's
// defaults applied, and returns their differences.
func sameObject(before, after *unstructured.Unstructured) string {
	if before.GetKind() != "ValkeyCluster" {
		if apiequality.Semantic.DeepEqual(before.Object["spec"], after.Object["spec"]) {
			return ""
		}
		return lineDiff(before.Object["spec"], after.Object["spec"])
	}
	specs := make([]v1beta1.ValkeyClusterSpec, 2)
	for i, u := range []*unstructured.Unstructured{before, after} {
		var vc v1beta1.ValkeyCluster
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vc); err != nil {
			return err.Error()
		}
		v1beta1.SetDefaults(&vc.Spec)
		specs[i] = vc.Spec
	}
	if apiequality.Semantic.DeepEqual(specs[0], specs[1]) {
		return ""
	}
	return lineDiff(specs[0], specs[1])
}

// lineDiff lists the lines of the YAML of a that b lacks (-) and those of b that a lacks (+).
func lineDiff(a, b any) string {
	lines := func(v any) []string {
		out, err := yaml.Marshal(v)
		if err != nil {
			return []string{err.Error()}
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	la, lb := lines(a), lines(b)
	var out []string
	for _, l := range la {
		if !slices.Contains(lb, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range lb {
		if !slices.Contains(la, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) == 0 {
		return "(the same lines in another order)"
	}
	return strings.Join(out, "\n")
}

// create checks a manifest's version and creates it in ns as a dry run.
func create(dyn dynamic.Interface, ns string, m manifest) error {
	want := group + "/" + version
	if m.old {
		want = group + "/" + oldVersion
	}
	if got := m.obj.GetAPIVersion(); got != want {
		if m.old {
			return fmt.Errorf("%s %s is %s, but its block is fenced as %s: fence it ```yaml", m.obj.GetKind(), m.obj.GetName(), got, oldVersion)
		}
		hint := ""
		if strings.HasSuffix(m.file, ".md") {
			hint = fmt.Sprintf(" (a block showing %s on purpose is fenced ```yaml %s)", oldVersion, oldVersion)
		}
		return fmt.Errorf("%s %s is %s: write %s%s", m.obj.GetKind(), m.obj.GetName(), got, want, hint)
	}
	gv, err := schema.ParseGroupVersion(m.obj.GetAPIVersion())
	if err != nil {
		return err
	}
	m.obj.SetNamespace(ns)
	_, err = dyn.Resource(gv.WithResource(resources[m.obj.GetKind()])).Namespace(ns).Create(context.Background(), m.obj,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		return fmt.Errorf("the API server refuses %s %s: %w", m.obj.GetKind(), m.obj.GetName(), err)
	}
	return nil
}

// manifest is one object of the operator's kinds found in a file.
type manifest struct {
	file  string // relative to the repository
	where string // file:line of the object's first line
	old   bool   // in a block fenced ```yaml v1alpha1
	obj   *unstructured.Unstructured
}

// docManifests reads every checked file under root.
func docManifests(t *testing.T, root string) []manifest {
	t.Helper()
	var files []string
	for _, pattern := range []string{"README.md", "docs/*.md", "docs/development/*.md", "charts/valkey-cluster/README.md", "config/samples/*.yaml"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		if len(matches) == 0 {
			t.Fatalf("no file matches %s", pattern)
		}
		files = append(files, matches...)
	}
	var out []manifest
	for _, path := range files {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		if reason, skip := notChecked[rel]; skip {
			t.Logf("%s is not checked: %s", rel, reason)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []block
		if strings.HasSuffix(rel, ".md") {
			blocks = yamlBlocks(string(data))
		} else {
			blocks = []block{{line: 1, text: string(data)}}
		}
		for _, b := range blocks {
			found, err := objects(b)
			if err != nil {
				t.Errorf("%s:%d: %v", rel, b.line, err)
			}
			for _, f := range found {
				out = append(out, manifest{file: rel, where: fmt.Sprintf("%s:%d", rel, f.line), old: b.old, obj: f.obj})
			}
		}
	}
	return out
}

// block is the text of a fenced YAML block and the line of its first line.
type block struct {
	line int
	old  bool
	text string
}

// yamlBlocks returns the ```yaml (or ```yml) blocks of a Markdown page.
func yamlBlocks(page string) []block {
	var out []block
	var cur *block
	var fence string
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil && fence == "" {
			if f, info, ok := openingFence(trimmed); ok {
				fence = f
				words := strings.Fields(info)
				if len(words) > 0 && (words[0] == "yaml" || words[0] == "yml") {
					cur = &block{line: i + 2, old: slices.Contains(words[1:], oldVersion)}
				}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, string(fence[0])) == "" {
			if cur != nil {
				out = append(out, *cur)
			}
			cur, fence = nil, ""
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
		}
	}
	return out
}

// openingFence reports whether line opens a fenced code block: its fence (three or more
// backticks or tildes) and its info string.
func openingFence(line string) (fence, info string, ok bool) {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return line[:n], strings.TrimSpace(line[n:]), true
		}
	}
	return "", "", false
}

// found is one object of a block and the line it starts on.
type found struct {
	line int
	obj  *unstructured.Unstructured
}

// objects decodes the YAML documents of a block and keeps those of the operator's kinds.
func objects(b block) ([]found, error) {
	var out []found
	line := b.line
	for _, doc := range splitDocuments(b.text) {
		start := line + leadingBlankOrComment(doc.text)
		line += doc.lines
		obj := map[string]any{}
		if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc.text), 4096).Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				continue
			}
			return out, fmt.Errorf("line %d: not YAML: %w", start, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
		if _, ok := resources[u.GetKind()]; !ok || gv.Group != group && u.GetAPIVersion() != "" {
			continue
		}
		out = append(out, found{line: start, obj: u})
	}
	return out, nil
}

// document is one YAML document of a block and how many lines it spans with its separator.
type document struct {
	text  string
	lines int
}

// splitDocuments splits at the lines "---".
func splitDocuments(text string) []document {
	var out []document
	cur := document{}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		cur.lines++
		if strings.TrimRight(line, " \n") == "---" {
			out = append(out, cur)
			cur = document{}
			continue
		}
		cur.text += line
	}
	return append(out, cur)
}

// leadingBlankOrComment counts the lines before a document's first content line.
func leadingBlankOrComment(text string) int {
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return n
		}
		n++
	}
	return n
}
