package main

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildHost builds the image for this machine's platform into a fresh directory, stamped as
// a release would be.
func buildHost(t *testing.T) result {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	res, err := build(context.Background(), options{root: root, out: t.TempDir(), platforms: "host", version: "v9.8.7-test", commit: "abc1234"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTheImageIsReproducibleAndRunsAsShipped builds the image twice: the same tree gives the
// same digest. The image is what the chart and the Dockerfile promise: one layer with only
// the static binary at /valkey-operator (no shell, nothing else), executable by anyone,
// owned by root, running as 65532 from /, and the binary it holds is the stamped operator.
func TestTheImageIsReproducibleAndRunsAsShipped(t *testing.T) {
	start := time.Now()
	first := buildHost(t)
	t.Logf("first build %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	second := buildHost(t)
	t.Logf("second build %s", time.Since(start).Round(time.Millisecond))
	if first.digest != second.digest {
		t.Fatalf("two builds of the same tree differ: %s and %s", first.digest, second.digest)
	}
	for _, res := range []result{first, second} {
		if _, err := os.Stat(res.archive); err != nil {
			t.Fatalf("no OCI archive: %v", err)
		}
	}
	a, err := os.ReadFile(first.archive)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second.archive)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("two builds of the same tree wrote different OCI archives")
	}

	idx, err := layout.ImageIndexFromPath(first.layout)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(outer.Manifests) != 1 || outer.Manifests[0].Digest.String() != first.digest ||
		outer.Manifests[0].Annotations[containerdNameAnnotation] != first.ref || !strings.HasSuffix(first.ref, ":"+outer.Manifests[0].Annotations[refNameAnnotation]) {
		t.Fatalf("the layout's index.json does not name the image: %+v", outer.Manifests)
	}
	images, err := idx.ImageIndex(outer.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := images.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s", im.MediaType)
	}
	want := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || !im.Manifests[0].Platform.Equals(want) {
		t.Fatalf("the index's platforms are %+v, want only %s", im.Manifests, want)
	}
	img, err := images.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/valkey-operator"}) || cf.Config.WorkingDir != "/" || len(cf.Config.Cmd) != 0 {
		t.Errorf("config: user %q entrypoint %q cmd %q workdir %q", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.WorkingDir)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s", cf.OS, cf.Architecture)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  "v9.8.7-test",
		"org.opencontainers.image.revision": "abc1234",
		"org.opencontainers.image.source":   "https://github.com/valkey-fsm/valkey-operator",
	} {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 on an empty base", len(layers))
	}
	bin := filepath.Join(t.TempDir(), "valkey-operator")
	checkLayer(t, layers[0], cf.Created.Time, bin)

	// The binary is the platform's and static (an empty base has no loader to link against).
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if machine != 0 && f.Machine != machine {
		t.Errorf("the binary is for %s, want %s", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader")
		}
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "valkey-operator v9.8.7-test (commit abc1234)" {
		t.Errorf("the image's binary --version: %v %q", err, out)
	}
}

// checkLayer reads the layer's tar: exactly one regular file, valkey-operator, 0755, root's,
// with the image's creation time. Its content is written to bin.
func checkLayer(t *testing.T, layer v1.Layer, created time.Time, bin string) {
	t.Helper()
	mt, err := layer.MediaType()
	if err != nil || mt != types.OCILayer {
		t.Errorf("layer media type %s %v", mt, err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Name != "valkey-operator" {
			continue
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || !hdr.ModTime.Equal(created) {
			t.Errorf("valkey-operator: type %c mode %o owner %d:%d %q time %s (created %s)", hdr.Typeflag, hdr.Mode, hdr.Uid, hdr.Gid, hdr.Uname, hdr.ModTime, created)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing else: no shell, no /etc, no package manager for an intruder to use.
	if !slices.Equal(names, []string{"valkey-operator"}) {
		t.Errorf("the layer holds %q, want only valkey-operator", names)
	}
}

// The default is the two platforms a release ships; "host" is this machine's; duplicates
// collapse; only linux is accepted.
func TestPlatforms(t *testing.T) {
	ps, err := parsePlatforms(defaultPlatforms)
	if err != nil || len(ps) != 2 || ps[0].String() != "linux/amd64" || ps[1].String() != "linux/arm64" {
		t.Errorf("default platforms: %v %v", ps, err)
	}
	ps, err = parsePlatforms("host, linux/" + runtime.GOARCH)
	if err != nil || len(ps) != 1 || ps[0].Architecture != runtime.GOARCH {
		t.Errorf("host: %v %v", ps, err)
	}
	if _, err := parsePlatforms("windows/amd64"); err == nil {
		t.Error("windows was accepted")
	}
	if _, err := parsePlatforms(" , "); err == nil {
		t.Error("no platform was accepted")
	}
}
