package localcluster

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// LayoutImage is an image read from an OCI image layout and unpacked for this machine.
type LayoutImage struct {
	// Name is the image's reference ("ghcr.io/valkey-fsm/valkey-operator:0.1.0"), from the
	// layout's io.containerd.image.name annotation: the one image name it maps, as a registry
	// serves one tag, so that a pod asking for another tag does not run it.
	Name string
	// Repository is Name without the tag.
	Repository string
	// Digest is the platform manifest's digest, which keys the unpacked root file system.
	Digest string
	// Image is how the node agent runs it: the config's entrypoint, command, user and working
	// directory, and RootFS, the unpacked layers.
	Image Image
}

// Path is where a path of the image (its entrypoint, "/valkey-operator") is on this machine.
func (l *LayoutImage) Path(p string) string {
	return filepath.Join(l.Image.RootFS, filepath.FromSlash(strings.TrimPrefix(p, "/")))
}

// LoadOCILayout reads the image of an OCI layout (make image writes one: dist/image/oci) for
// this machine's platform: its index (or, in an index of indexes, the first that holds the
// platform), the manifest of linux/GOARCH, its config, and its layers unpacked into a root file
// system cached by the manifest's digest (imageCacheDir), so that starting a second cluster or
// a second container unpacks nothing.
func LoadOCILayout(dir string) (*LayoutImage, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) == 0 {
		return nil, fmt.Errorf("OCI layout %s holds no image", dir)
	}
	desc := im.Manifests[0]
	ref := desc.Annotations["io.containerd.image.name"]
	if ref == "" {
		return nil, fmt.Errorf("OCI layout %s names no image (annotation io.containerd.image.name of its index.json)", dir)
	}
	tag, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: image name %q: %w", dir, ref, err)
	}
	img, err := hostImage(top, desc)
	if err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	root, err := unpackedRootFS(img, digest)
	if err != nil {
		return nil, err
	}
	if len(cf.Config.Entrypoint) == 0 && len(cf.Config.Cmd) == 0 {
		return nil, fmt.Errorf("OCI layout %s: the image has neither entrypoint nor command", dir)
	}
	return &LayoutImage{
		Name:       tag.Name(),
		Repository: tag.Context().Name(),
		Digest:     digest.String(),
		Image: Image{
			Entrypoint: cf.Config.Entrypoint,
			Cmd:        cf.Config.Cmd,
			User:       cf.Config.User,
			WorkingDir: cf.Config.WorkingDir,
			RootFS:     root,
		},
	}, nil
}

// hostPlatform is what a container runtime on this machine pulls.
func hostPlatform() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

// hostImage resolves desc (an index or a manifest in idx) to the image of hostPlatform, as a
// runtime resolves a multi-platform tag.
func hostImage(idx v1.ImageIndex, desc v1.Descriptor) (v1.Image, error) {
	switch desc.MediaType {
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		if desc.Platform != nil && !desc.Platform.Satisfies(hostPlatform()) {
			return nil, fmt.Errorf("the image is for %s, this machine is %s", desc.Platform, hostPlatform())
		}
		return idx.Image(desc.Digest)
	case types.OCIImageIndex, types.DockerManifestList:
	default:
		return nil, fmt.Errorf("unknown media type %s", desc.MediaType)
	}
	inner, err := idx.ImageIndex(desc.Digest)
	if err != nil {
		return nil, err
	}
	im, err := inner.IndexManifest()
	if err != nil {
		return nil, err
	}
	var have []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			continue
		}
		have = append(have, m.Platform.String())
		if m.Platform.Satisfies(hostPlatform()) {
			return inner.Image(m.Digest)
		}
	}
	return nil, fmt.Errorf("no image for %s in the index (it has %v; make image IMAGE_PLATFORMS=host builds this machine's)", hostPlatform(), have)
}

// imageCacheDir holds unpacked images, one directory per manifest digest, in the per-user
// cache beside the built tools (hack/cache-dir.sh): a digest names its content, so every
// checkout and cluster can share them. It may be under a private home: containers see a root
// file system through an overlay mounted by root, which reads the layers with root's rights.
func imageCacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "valkey-fsm", "images"), nil
}

// unusedImageAge is how long an unpacked image nobody loaded stays: each code change makes a
// new digest (tens of megabytes), and a cluster that runs one loaded it when it started.
const unusedImageAge = 48 * time.Hour

// unpackedRootFS returns the directory holding img's layers unpacked, unpacking them the first
// time. Concurrent loads (test packages run in parallel) each unpack into a directory of their
// own and rename it into place: the first rename wins and the others discard theirs, so no
// reader ever sees a half-written root.
func unpackedRootFS(img v1.Image, digest v1.Hash) (string, error) {
	cache, err := imageCacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(cache, digest.Algorithm+"-"+digest.Hex)
	if _, err := os.Stat(dir); err == nil {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: not pruned
		return dir, nil
	}
	tmp, err := os.MkdirTemp(cache, ".unpack-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	if err := untar(rc, tmp); err != nil {
		return "", fmt.Errorf("unpacking %s: %w", digest, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr == nil {
			return dir, nil // another load got there first with the same content
		}
		return "", err
	}
	pruneImages(cache, dir)
	return dir, nil
}

// pruneImages removes unpacked images not loaded for unusedImageAge, and unpacks that a killed
// process left half done, except keep.
func pruneImages(cache, keep string) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(cache, e.Name())
		info, err := e.Info()
		if err != nil || p == keep || time.Since(info.ModTime()) < unusedImageAge {
			continue
		}
		_ = os.RemoveAll(p)
	}
}

// untar writes a flattened image file system (mutate.Extract: whiteouts applied) under dir,
// keeping modes and owners. Names are checked to stay inside dir, links too: an image is input.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.Clean(strings.TrimPrefix(filepath.FromSlash(hdr.Name), "/"))
		if rel == "." {
			continue
		}
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%q leaves the root", hdr.Name)
		}
		target := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(hdr.Mode).Perm() | os.FileMode(hdr.Mode)&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			// An absolute target means the container's root, which the overlay makes it.
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return err
			}
			continue
		case tar.TypeLink:
			src := filepath.Clean(strings.TrimPrefix(filepath.FromSlash(hdr.Linkname), "/"))
			if !filepath.IsLocal(src) {
				return fmt.Errorf("hard link %q to %q leaves the root", hdr.Name, hdr.Linkname)
			}
			if err := os.Link(filepath.Join(dir, src), target); err != nil {
				return err
			}
			continue
		default:
			continue // devices and fifos: a runtime makes /dev itself
		}
		if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
		if err := os.Chtimes(target, hdr.ModTime, hdr.ModTime); err != nil {
			return err
		}
	}
}
