package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const testVersion = "v0.0.0-test.1"

// TestARelease builds a release twice as make release does, for this machine's platform (the
// image; the plugin also for windows/amd64, a zip) so that the test stays short: the six plugin
// binaries and the two image platforms of a real release are the same code for more
// GOOS/GOARCH pairs. The first build pushes the image and the charts to a real registry (the
// CNCF distribution registry) on loopback. Then every file is checked as its user would use
// it, and the two builds must be the same bytes.
func TestARelease(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := toolPath(t, root, "helm.sh", "--path")
	// helm's and the image push's credentials and caches stay in the test.
	for _, k := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME", "DOCKER_CONFIG"} {
		t.Setenv(k, t.TempDir())
	}
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "config.json"))
	reg := startRegistry(t, root)
	host := runtime.GOOS + "/" + runtime.GOARCH
	o := options{version: testVersion, commit: "abc1234", out: t.TempDir(), downloadBase: "https://example.invalid/releases", root: root,
		platforms: []string{host, "windows/amd64"}, imagePlatforms: "host", helm: helm,
		imagePush: reg + "/valkey-fsm/valkey-operator:" + testVersion, chartPush: "oci://" + reg + "/valkey-fsm/charts", plainHTTP: true}
	start := time.Now()
	rel, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the first build and push: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	again := o
	again.out, again.imagePush, again.chartPush = t.TempDir(), "", ""
	rel2, err := build(again)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the second build: %s", time.Since(start).Round(time.Millisecond))

	t.Run("two builds are the same bytes", func(t *testing.T) {
		if rel.image.digest != rel2.image.digest {
			t.Errorf("the image's index: %s, then %s", rel.image.digest, rel2.image.digest)
		}
		// checksums.txt names every file of the release (checked below): equal files, equal
		// releases.
		a, b := readFile(t, rel.checksums), readFile(t, rel2.checksums)
		if !bytes.Equal(a, b) {
			t.Errorf("two builds of one commit differ:\n%s\n%s", a, b)
		}
	})
	t.Run("checksums.txt covers and verifies every file", func(t *testing.T) { checkChecksums(t, o.out, rel) })
	t.Run("krew validates the manifest and installs every archive", func(t *testing.T) {
		bins := strings.Fields(toolPath(t, root, "krew.sh"))
		if len(bins) != 2 {
			t.Fatalf("hack/krew.sh printed %q", bins)
		}
		if err := checkWithKrew(rel, bins[0], bins[1]); err != nil {
			t.Fatal(err)
		}
		manifest := readFile(t, rel.manifest)
		if !strings.Contains(string(manifest), "uri: https://example.invalid/releases/"+testVersion+"/kubectl-valkey_"+testVersion+"_windows_amd64.zip") {
			t.Errorf("the manifest does not name the windows archive's URL:\n%s", manifest)
		}
		checkPluginArchive(t, rel.archives[0].path)
	})
	t.Run("the charts are the release's and pull its image", func(t *testing.T) { checkCharts(t, rel, helm) })
	t.Run("the CRDs file is every CRD", func(t *testing.T) { checkCRDs(t, root, rel.crds) })
	t.Run("the SBOM lists each binary's modules", func(t *testing.T) { checkSBOM(t, root, rel) })
	t.Run("the registry serves what was pushed", func(t *testing.T) { checkPushed(t, reg, rel, helm) })

	bad := o
	bad.version, bad.out = "abc1234-dirty", t.TempDir()
	if _, err := build(bad); err == nil || !strings.Contains(err.Error(), "not a release version") {
		t.Errorf("a version krew and Helm refuse was accepted: %v", err)
	}
}

// toolPath runs a hack/ script that prints a tool's path.
func toolPath(t *testing.T, root, script string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", script), args...).Output()
	if err != nil {
		t.Fatalf("hack/%s: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkChecksums reads checksums.txt as sha256sum -c does: every line's file has that sum,
// and every file of the release (but the image's layout, which the archive holds) is listed.
func checkChecksums(t *testing.T, out string, rel release) {
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, rel.checksums)))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: %q is not SUM  FILE", sc.Text())
		}
		if got := sha256Hex(readFile(t, filepath.Join(out, file))); got != sum {
			t.Errorf("%s: sha256 %s, checksums.txt says %s", file, got, sum)
		}
		listed[file] = true
	}
	var unlisted []string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		if d.IsDir() && rel == "image" {
			return filepath.SkipDir
		}
		if !d.IsDir() && rel != "checksums.txt" && !listed[filepath.ToSlash(rel)] {
			unlisted = append(unlisted, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unlisted) > 0 {
		t.Errorf("files of the release that checksums.txt does not list: %v", unlisted)
	}
	// What a release is made of, each listed.
	want := []string{"valkey-operator-crds.yaml", "valkey-operator-image_" + testVersion + ".oci.tar", "valkey-operator_" + testVersion + ".spdx.json",
		"valkey-operator-0.0.0-test.1.tgz", "valkey-cluster-0.0.0-test.1.tgz", "plugins/valkey.yaml"}
	for _, a := range rel.archives {
		want = append(want, a.name)
	}
	for _, w := range want {
		if !listed[w] {
			t.Errorf("checksums.txt does not list %s", w)
		}
	}
}

// checkPluginArchive: the tar.gz holds exactly the binary (executable) and the LICENSE.
func checkPluginArchive(t *testing.T, path string) {
	var names []string
	for _, h := range tgzEntries(t, readFile(t, path)) {
		names = append(names, h.Name)
		if h.Name == "kubectl-valkey" && h.Mode&0o111 == 0 {
			t.Errorf("kubectl-valkey is not executable in the archive: %o", h.Mode)
		}
	}
	if strings.Join(names, " ") != "LICENSE kubectl-valkey" {
		t.Errorf("the archive holds %v", names)
	}
}

type tgzEntry struct {
	*tar.Header
	data []byte
}

func tgzEntries(t *testing.T, data []byte) []tgzEntry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []tgzEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tgzEntry{h, b})
	}
}

// checkCharts: each package's Chart.yaml has the release's version and appVersion, every file
// in it carries the commit's time (not the packaging's), and the operator chart rendered with
// its defaults runs the image hack/image tagged the release's layout with.
func checkCharts(t *testing.T, rel release, helm string) {
	if len(rel.charts) != len(chartDirs) {
		t.Fatalf("%d chart packages, %d charts", len(rel.charts), len(chartDirs))
	}
	for _, c := range rel.charts {
		var found bool
		for _, e := range tgzEntries(t, readFile(t, c.path)) {
			if !e.ModTime.Equal(rel.created) {
				t.Errorf("%s: %s has the time %s, not the commit's %s", filepath.Base(c.path), e.Name, e.ModTime, rel.created)
			}
			if e.Name != c.name+"/Chart.yaml" {
				continue
			}
			found = true
			var meta struct{ Version, AppVersion string }
			if err := yaml.Unmarshal(e.data, &meta); err != nil {
				t.Fatal(err)
			}
			if meta.Version != "0.0.0-test.1" || meta.AppVersion != testVersion {
				t.Errorf("%s: version %q appVersion %q", c.name, meta.Version, meta.AppVersion)
			}
		}
		if !found {
			t.Errorf("%s holds no %s/Chart.yaml", c.path, c.name)
		}
	}
	images := renderedImages(t, helm, "template", "v", rel.charts[0].path, "--kube-version", kubeVersion(t))
	if want := layoutRef(t, rel.image.layout); !slices.Equal(images, []string{want}) {
		t.Errorf("the packaged operator chart runs %q, the release's image is %s", images, want)
	}
}

// layoutRef is the full reference hack/image named the layout's index with.
func layoutRef(t *testing.T, dir string) string {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("the layout's index.json: %+v %v", m, err)
	}
	return m.Manifests[0].Annotations["io.containerd.image.name"]
}

// renderedImages runs helm (template of a package or an oci:// reference) and returns the
// images of the Deployments' and StatefulSets' containers.
func renderedImages(t *testing.T, helm string, args ...string) []string {
	t.Helper()
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var images []string
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var o struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct{ Image string }
					}
				}
			}
		}
		if err := d.Decode(&o); errors.Is(err, io.EOF) {
			return images
		} else if err != nil {
			t.Fatal(err)
		}
		if o.Kind == "Deployment" || o.Kind == "StatefulSet" {
			for _, c := range o.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
	}
}

// checkCRDs: the file holds exactly the CRDs of the chart's files/crds, each unchanged.
func checkCRDs(t *testing.T, root, file string) {
	want := map[string]apiextensionsv1.CustomResourceDefinition{}
	srcs, err := filepath.Glob(filepath.Join(root, crdsDir, "*.yaml"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no CRDs in %s: %v", crdsDir, err)
	}
	for _, s := range srcs {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(readFile(t, s), &crd); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want[crd.Name] = crd
	}
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(readFile(t, file)), 4096)
	var kinds []string
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := d.Decode(&crd); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		w, ok := want[crd.Name]
		if !ok || crd.Kind != "CustomResourceDefinition" {
			t.Errorf("%s: a %s %q the chart does not have", crdsFile, crd.Kind, crd.Name)
			continue
		}
		if !reflect.DeepEqual(crd, w) {
			t.Errorf("%s: %s differs from the chart's", crdsFile, crd.Name)
		}
		delete(want, crd.Name)
		kinds = append(kinds, crd.Spec.Names.Kind)
	}
	if len(want) > 0 {
		t.Errorf("%s lacks %v", crdsFile, want)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"ValkeyACL", "ValkeyBackup", "ValkeyCluster"}) {
		t.Errorf("%s holds the kinds %v", crdsFile, kinds)
	}
}

// checkSBOM: an SPDX 2.3 document describing every shipped binary, whose modules include
// valkey-go and controller-runtime (the operator's) at the versions and go.sum hashes the
// module graph resolves, as Go itself reports them.
func checkSBOM(t *testing.T, root string, rel release) {
	var doc spdxDocument
	if err := json.Unmarshal(readFile(t, rel.sbom), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.CreationInfo.Created == "" {
		t.Errorf("document header: %+v", doc)
	}
	byID := map[string]spdxPackage{}
	for _, p := range doc.Packages {
		if _, dup := byID[p.SPDXID]; dup {
			t.Errorf("two packages are %s", p.SPDXID)
		}
		byID[p.SPDXID] = p
	}
	deps := map[string][]string{}
	var described []string
	for _, r := range doc.Relationships {
		if _, ok := byID[r.RelatedSPDXElement]; !ok {
			t.Errorf("relationship %+v names no package", r)
		}
		switch r.RelationshipType {
		case "DESCRIBES":
			described = append(described, byID[r.RelatedSPDXElement].Name+" "+byID[r.RelatedSPDXElement].Comment)
		case "DEPENDS_ON":
			deps[r.SPDXElementID] = append(deps[r.SPDXElementID], r.RelatedSPDXElement)
		}
	}
	if len(described) != len(rel.archives)+len(rel.image.binaries) {
		t.Errorf("the SBOM describes %d binaries, the release ships %d plugins and %d operator binaries:\n%s",
			len(described), len(rel.archives), len(rel.image.binaries), strings.Join(described, "\n"))
	}
	cmd := exec.Command("go", "list", "-m", "-json", "github.com/valkey-io/valkey-go", "sigs.k8s.io/controller-runtime")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	operator := spdxID("binary", "valkey-operator", "linux/"+runtime.GOARCH)
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, Sum string }
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		id := spdxID("gomod", m.Path, m.Version)
		p, ok := byID[id]
		if !ok || p.Name != m.Path || p.VersionInfo != m.Version || !strings.Contains(p.Comment, m.Sum) || len(p.Checksums) != 1 {
			t.Errorf("the SBOM's %s: %+v; go list -m says %s %s %s", id, p, m.Path, m.Version, m.Sum)
		}
		if !slices.Contains(deps[operator], id) {
			t.Errorf("the SBOM does not say %s depends on %s %s", operator, m.Path, m.Version)
		}
	}
}

// checkPushed: the registry holds the image's index by the release's digest, and helm pulls
// each chart from its oci:// reference as the very package the release holds, and renders
// the operator chart from there with the release's image.
func checkPushed(t *testing.T, reg string, rel release, helm string) {
	r, err := name.ParseReference(reg + "/valkey-fsm/valkey-operator:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := idx.Digest(); err != nil || d.String() != rel.image.digest {
		t.Errorf("the registry serves the image %s (%v), the release built %s", d, err, rel.image.digest)
	}
	if want := reg + "/valkey-fsm/valkey-operator@" + rel.image.digest; rel.image.pushed != want {
		t.Errorf("pushed %q, want %q", rel.image.pushed, want)
	}
	for _, c := range rel.charts {
		ref := "oci://" + reg + "/valkey-fsm/charts/" + c.name
		if !strings.HasPrefix(c.pushed, reg+"/valkey-fsm/charts/"+c.name+"@sha256:") {
			t.Errorf("%s pushed as %q", c.name, c.pushed)
		}
		dir := t.TempDir()
		if out, err := exec.Command(helm, "pull", ref, "--version", "0.0.0-test.1", "--plain-http", "--destination", dir).CombinedOutput(); err != nil {
			t.Fatalf("helm pull %s: %v\n%s", ref, err, out)
		}
		if !bytes.Equal(readFile(t, filepath.Join(dir, filepath.Base(c.path))), readFile(t, c.path)) {
			t.Errorf("helm pull %s is not the release's %s", ref, filepath.Base(c.path))
		}
	}
	images := renderedImages(t, helm, "template", "v", "oci://"+reg+"/valkey-fsm/charts/valkey-operator", "--version", "0.0.0-test.1", "--plain-http", "--kube-version", kubeVersion(t))
	if want := layoutRef(t, rel.image.layout); !slices.Equal(images, []string{want}) {
		t.Errorf("the operator chart from the registry runs %q, the release's image is %s", images, want)
	}
}

// kubeVersion is the Kubernetes version the local cluster runs (helm template assumes an old
// one, which the charts' kubeVersion refuses).
func kubeVersion(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod := readFile(t, filepath.Join(root, "e2e", "kubebin", "kube", "go.mod"))
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v\d+\.\d+\.\d+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("e2e/kubebin/kube/go.mod requires no k8s.io/kubernetes version")
	}
	return string(m[1])
}
