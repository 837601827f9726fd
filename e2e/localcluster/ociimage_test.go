package localcluster

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// tarEntry is one file of a test layer: a regular file unless link or dir is set.
type tarEntry struct {
	name, body, link string
	mode             int64
	uid              int
	dir, hard        bool
}

func testLayer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		case e.hard:
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, e.link, 0
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeTestLayout writes an OCI layout whose index holds one image per platform, each made of
// layers and cfg, named ref as make image names its layout.
func writeTestLayout(t *testing.T, ref string, cfg v1.Config, platforms []v1.Platform, layers ...v1.Layer) string {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Config = p.OS, p.Architecture, cfg
		// A file only the platform's image has, to tell which one was unpacked.
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, testLayer(t, tarEntry{name: "platform", body: p.String(), mode: 0o644})); err != nil {
			t.Fatal(err)
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	dir := filepath.Join(t.TempDir(), "oci")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"io.containerd.image.name": ref})); err != nil {
		t.Fatal(err)
	}
	return dir
}

// otherPlatform is a platform this machine is not.
func otherPlatform() v1.Platform {
	if runtime.GOARCH == "arm64" {
		return v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	return v1.Platform{OS: "linux", Architecture: "arm64"}
}

// The node agent reads a layout as a runtime pulls a tag: the host platform's image of the
// index, its layers applied in order (a later layer's whiteout removes a file, its file
// replaces one), modes and owners kept, links inside the root; the config says how to run it.
func TestLoadOCILayoutUnpacksTheHostPlatformsImage(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	base := testLayer(t,
		tarEntry{name: "app/", dir: true, mode: 0o755},
		tarEntry{name: "app/run", body: "#!/bin/sh\necho one\n", mode: 0o755},
		tarEntry{name: "app/secret", body: "gone", mode: 0o600},
		tarEntry{name: "app/owned", body: "x", mode: 0o640, uid: 65532},
	)
	top := testLayer(t,
		tarEntry{name: "app/.wh.secret", mode: 0o644},
		tarEntry{name: "app/run", body: "#!/bin/sh\necho two\n", mode: 0o755},
		tarEntry{name: "app/current", link: "/app/run"},
		tarEntry{name: "app/same", link: "app/run", hard: true},
	)
	cfg := v1.Config{Entrypoint: []string{"/app/run"}, Cmd: []string{"--flag"}, User: "65532:65532", WorkingDir: "/app"}
	dir := writeTestLayout(t, "registry.test/team/app:1.2", cfg, []v1.Platform{otherPlatform(), hostPlatform()}, base, top)

	img, err := LoadOCILayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if img.Repository != "registry.test/team/app" || img.Name != "registry.test/team/app:1.2" {
		t.Errorf("name %q, repository %q", img.Name, img.Repository)
	}
	if got := img.Image; !slices.Equal(got.Entrypoint, cfg.Entrypoint) || !slices.Equal(got.Cmd, cfg.Cmd) || got.User != cfg.User || got.WorkingDir != "/app" {
		t.Errorf("image %+v", got)
	}
	read := func(p string) string {
		b, err := os.ReadFile(img.Path(p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("/platform"); got != hostPlatform().String() {
		t.Errorf("unpacked the image of %s", got)
	}
	if got := read("/app/run"); got != "#!/bin/sh\necho two\n" {
		t.Errorf("the upper layer's file did not win: %q", got)
	}
	if _, err := os.Lstat(img.Path("/app/secret")); !os.IsNotExist(err) {
		t.Errorf("a whited-out file is there: %v", err)
	}
	if link, err := os.Readlink(img.Path("/app/current")); err != nil || link != "/app/run" {
		t.Errorf("symlink: %q %v", link, err)
	}
	if read("/app/same") != read("/app/run") {
		t.Error("the hard link is not the file")
	}
	st, err := os.Stat(img.Path("/app/owned"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); st.Mode().Perm() != 0o640 || sys.Uid != 65532 || sys.Gid != 65532 {
		t.Errorf("/app/owned: mode %v owner %d:%d", st.Mode(), sys.Uid, sys.Gid)
	}
	if !strings.Contains(img.Image.RootFS, strings.ReplaceAll(img.Digest, ":", "-")) {
		t.Errorf("the root file system %s is not keyed by the digest %s", img.Image.RootFS, img.Digest)
	}

	// Loaded again (another cluster, another container): the same directory, nothing unpacked.
	marker := img.Path("/marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := LoadOCILayout(dir)
	if err != nil || again.Image.RootFS != img.Image.RootFS {
		t.Fatalf("second load: %v, %v", again, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the second load unpacked again")
	}
}

// Test packages start clusters in parallel: loads of a new image at the same time all get the
// same complete root file system.
func TestLoadOCILayoutConcurrently(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var entries []tarEntry
	for i := range 200 {
		entries = append(entries, tarEntry{name: "files/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + string(rune('a'+i/26)), body: strings.Repeat("y", 4096), mode: 0o644})
	}
	dir := writeTestLayout(t, "registry.test/app:1", v1.Config{Entrypoint: []string{"/files/aa-a"}}, []v1.Platform{hostPlatform()}, testLayer(t, entries...))
	var wg sync.WaitGroup
	roots := make([]string, 8)
	errs := make([]error, 8)
	for i := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := LoadOCILayout(dir)
			if err == nil {
				roots[i] = img.Image.RootFS
				var n []os.DirEntry
				n, err = os.ReadDir(filepath.Join(img.Image.RootFS, "files"))
				if err == nil && len(n) != len(entries) {
					t.Errorf("a load saw %d of %d files", len(n), len(entries))
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range roots {
		if errs[i] != nil || roots[i] != roots[0] {
			t.Fatalf("load %d: %s %v (first %s)", i, roots[i], errs[i], roots[0])
		}
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(roots[0]), ".unpack-*"))
	if err != nil || len(left) != 0 {
		t.Errorf("unpacks left behind: %v %v", left, err)
	}
}

// An image is input: a layout without this machine's platform, without a name, or whose layer
// reaches out of the root is refused with the reason.
func TestLoadOCILayoutRefuses(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := v1.Config{Entrypoint: []string{"/x"}}
	ok := testLayer(t, tarEntry{name: "x", body: "x", mode: 0o755})
	for _, c := range []struct {
		name, want string
		dir        func() string
	}{
		{"other platform only", "no image for " + hostPlatform().String(), func() string {
			return writeTestLayout(t, "registry.test/app:1", cfg, []v1.Platform{otherPlatform()}, ok)
		}},
		{"no name", "names no image", func() string {
			return writeTestLayout(t, "", cfg, []v1.Platform{hostPlatform()}, ok)
		}},
		{"nothing to run", "neither entrypoint nor command", func() string {
			return writeTestLayout(t, "registry.test/app:1", v1.Config{}, []v1.Platform{hostPlatform()}, ok)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadOCILayout(c.dir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// A layer entry that names a path out of the root, or links to one, is never written there:
// mutate.Extract drops such names, and untar refuses what gets through to it.
func TestImageFilesStayInTheRoot(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	for _, e := range []tarEntry{
		{name: "../../../escaped", body: "x", mode: 0o644},
		{name: "/../../../escaped", body: "x", mode: 0o644},
		{name: "escaped", link: "../../../etc/hostname", hard: true},
	} {
		layer := testLayer(t, tarEntry{name: "x", body: "x", mode: 0o755}, e)
		dir := writeTestLayout(t, "registry.test/app:1", v1.Config{Entrypoint: []string{"/x"}}, []v1.Platform{hostPlatform()}, layer)
		if img, err := LoadOCILayout(dir); err == nil {
			if data, err := os.ReadFile(img.Path("/escaped")); err == nil && len(data) > 1 {
				t.Errorf("%s: a link reached out of the root: %q", e.name, data)
			}
		}
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		err = untar(rc, root)
		_ = rc.Close()
		if err == nil || !strings.Contains(err.Error(), "leaves the root") {
			t.Errorf("%s: untar: %v, want it refused", e.name, err)
		}
	}
	found, _ := filepath.Glob(filepath.Join(filepath.Dir(cache), "*", "escaped"))
	found2, _ := filepath.Glob(filepath.Join(cache, "*", "escaped"))
	found3, _ := filepath.Glob(filepath.Join(cache, "valkey-fsm", "escaped"))
	if len(found)+len(found2)+len(found3) != 0 {
		t.Errorf("files out of the root: %v %v %v", found, found2, found3)
	}
}

// The operator's layout maps the one image it names, as a registry serves one tag: the chart's
// default tag runs it, another tag of the repository has no mapping (a pod asking for it does
// not silently run this build).
func TestTheOperatorLayoutMapsItsOwnTagOnly(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	layer := testLayer(t, tarEntry{name: "valkey-operator", body: "x", mode: 0o755})
	dir := writeTestLayout(t, "ghcr.io/valkey-fsm/valkey-operator:0.1.0", v1.Config{Entrypoint: []string{"/valkey-operator"}}, []v1.Platform{hostPlatform()}, layer)
	images, err := DefaultImages(dir)
	if err != nil {
		t.Fatal(err)
	}
	if img, ok := lookupImage(images, "ghcr.io/valkey-fsm/valkey-operator:0.1.0"); !ok || img.RootFS == "" || img.Entrypoint[0] != "/valkey-operator" {
		t.Errorf("the layout's own tag: %+v %v", img, ok)
	}
	for _, other := range []string{"ghcr.io/valkey-fsm/valkey-operator:dev", "ghcr.io/valkey-fsm/valkey-operator", "ghcr.io/valkey-fsm/valkey-operator:0.1.1"} {
		if img, ok := lookupImage(images, other); ok {
			t.Errorf("%s is mapped: %+v", other, img)
		}
	}
	if _, err := DefaultImages(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing layout was accepted")
	}
}
