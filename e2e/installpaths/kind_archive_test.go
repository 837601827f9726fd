package installpaths

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// TestTheImageArchiveLoadsUnderTheChartsReference: the kind path of docs/operator.md is make
// image, kind load image-archive dist/image/valkey-operator.oci.tar, and helm install with the
// chart's defaults. kind imports the archive with containerd (ctr images import --all-platforms
// --digests), which reads an OCI archive as a tar of oci-layout, index.json and blobs/, names
// each image of index.json after its io.containerd.image.name annotation, and with
// --all-platforms needs every blob of every platform in the archive. The archive make image
// writes (as TestMain built it) is read that way here: the name is the image the chart runs by
// default, and every manifest, config and layer the index reaches is in it with its digest.
// Unpacked, the local cluster's loader runs it under that same name.
func TestTheImageArchiveLoadsUnderTheChartsReference(t *testing.T) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./hack/image", "-print-ref")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "IMAGE=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./hack/image -print-ref: %v", err)
	}
	chartRef := strings.TrimSpace(string(out))
	archive := filepath.Join(root, ".cache", "image", "valkey-operator.oci.tar")

	files := readArchive(t, archive)
	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(files["oci-layout"], &layout); err != nil || layout.Version != "1.0.0" {
		t.Fatalf("oci-layout %q (%v): containerd imports OCI layout 1.0.0", files["oci-layout"], err)
	}
	var index ociIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != chartRef {
		t.Fatalf("index.json names %+v; the chart runs %s", index.Manifests, chartRef)
	}
	// Every blob reachable from index.json, through nested indexes, for all platforms.
	seen := 0
	var reach func(d ociDescriptor)
	reach = func(d ociDescriptor) {
		body := blob(t, files, d)
		seen++
		switch d.MediaType {
		case "application/vnd.oci.image.index.v1+json":
			var idx ociIndex
			if err := json.Unmarshal(body, &idx); err != nil {
				t.Fatal(err)
			}
			for _, m := range idx.Manifests {
				reach(m)
			}
		case "application/vnd.oci.image.manifest.v1+json":
			var m struct {
				Config ociDescriptor   `json:"config"`
				Layers []ociDescriptor `json:"layers"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			blob(t, files, m.Config)
			for _, l := range m.Layers {
				blob(t, files, l)
			}
		default:
			t.Errorf("%s has media type %s, which containerd does not walk", d.Digest, d.MediaType)
		}
	}
	reach(index.Manifests[0])

	// The same archive unpacked is an OCI layout the local cluster runs, by that name.
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := localcluster.LoadOCILayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if img.Name != chartRef {
		t.Errorf("the unpacked archive loads as %s, the chart runs %s", img.Name, chartRef)
	}
	if _, err := os.Stat(img.Path(img.Image.Entrypoint[0])); err != nil {
		t.Errorf("the image's entrypoint: %v", err)
	}
	t.Logf("%s: %d manifests and indexes, loads as %s", archive, seen, img.Name)
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

// readArchive returns the regular files of a tar by their cleaned names, as containerd's
// importer keys them.
func readArchive(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("the archive make image writes: %v", err)
	}
	defer func() { _ = f.Close() }()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[path.Clean(hdr.Name)] = body
	}
}

// blob is the archive's blobs/<algorithm>/<hex> of d, checked against its digest and size.
func blob(t *testing.T, files map[string][]byte, d ociDescriptor) []byte {
	t.Helper()
	algo, hexDigest, ok := strings.Cut(d.Digest, ":")
	body, found := files["blobs/"+algo+"/"+hexDigest]
	if !ok || algo != "sha256" || !found {
		t.Fatalf("blob %s is not in the archive", d.Digest)
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(body)) != d.Size {
		t.Fatalf("blob %s: content does not match its digest and size %d", d.Digest, d.Size)
	}
	return body
}
