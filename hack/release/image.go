package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"
)

// image is the operator's image as hack/image built it for the release.
type image struct {
	// ref is the reference the layout is tagged with: the chart's image repository and the
	// release's version, which the packaged chart pulls by default.
	ref, digest string
	// layout is the OCI layout (image/oci), archive the same as one file.
	layout, archive string
	binaries        []operatorBinary
	// pushed is the reference by digest the index was pushed to.
	pushed string
}

// operatorBinary is one platform's operator binary as it is in the image.
type operatorBinary struct{ platform, path string }

// buildImage runs hack/image (what make image runs) with the release's version, commit and
// time, tagged as the packaged chart pulls it, into o.out/image, and moves the archive to the
// release's top level under a name with the version.
func buildImage(o options, created time.Time) (image, error) {
	repo, err := chartImageRepository(o.root)
	if err != nil {
		return image{}, err
	}
	dir := filepath.Join(o.out, "image")
	ref := repo + ":" + o.version
	cmd := exec.Command("go", "run", "./hack/image", "-out", dir, "-platforms", o.imagePlatforms,
		"-version", o.version, "-commit", o.commit, "-ref", ref, "-push=")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(created.Unix(), 10))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return image{}, fmt.Errorf("go run ./hack/image: %w\n%s", err, stderr)
	}
	// hack/image's first line: REF DIGEST.
	first, _, _ := strings.Cut(string(out), "\n")
	fields := strings.Fields(first)
	if len(fields) != 2 || fields[0] != ref {
		return image{}, fmt.Errorf("hack/image printed %q, want %s and a digest", first, ref)
	}
	img := image{ref: ref, digest: fields[1], layout: filepath.Join(dir, "oci"),
		archive: filepath.Join(o.out, fmt.Sprintf("valkey-operator-image_%s.oci.tar", o.version))}
	if err := os.Rename(filepath.Join(dir, "valkey-operator.oci.tar"), img.archive); err != nil {
		return image{}, err
	}
	// hack/image leaves each platform's binary in its bin directory: the SBOM reads them.
	bins, err := filepath.Glob(filepath.Join(dir, "bin", "valkey-operator-*"))
	if err != nil {
		return image{}, err
	}
	for _, b := range bins {
		p := strings.TrimPrefix(filepath.Base(b), "valkey-operator-")
		img.binaries = append(img.binaries, operatorBinary{platform: strings.Replace(p, "-", "/", 1), path: b})
	}
	if len(img.binaries) == 0 {
		return image{}, fmt.Errorf("hack/image left no binary in %s", filepath.Join(dir, "bin"))
	}
	return img, nil
}

// chartImageRepository is the operator chart's values.yaml image.repository.
func chartImageRepository(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "charts", "valkey-operator", "values.yaml"))
	if err != nil {
		return "", err
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return "", fmt.Errorf("charts/valkey-operator/values.yaml: %w", err)
	}
	if values.Image.Repository == "" {
		return "", fmt.Errorf("charts/valkey-operator/values.yaml names no image.repository")
	}
	return values.Image.Repository, nil
}

// pushImage pushes the index of the release's layout to o.imagePush, with the credentials
// `docker login` (or crane, podman) stored for its registry, and returns it by digest. A
// registry on loopback is spoken to over HTTP, as go-containerregistry does for localhost.
func pushImage(o options, rel release) (string, error) {
	r, err := name.ParseReference(o.imagePush)
	if err != nil {
		return "", fmt.Errorf("IMAGE_PUSH %q: %w", o.imagePush, err)
	}
	p, err := layout.FromPath(rel.image.layout)
	if err != nil {
		return "", err
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return "", err
	}
	h, err := v1.NewHash(rel.image.digest)
	if err != nil {
		return "", err
	}
	idx, err := outer.ImageIndex(h)
	if err != nil {
		return "", fmt.Errorf("the layout %s holds no index %s: %w", rel.image.layout, rel.image.digest, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(context.Background()), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing the image to %s: %w", o.imagePush, err)
	}
	return r.Context().Digest(rel.image.digest).String(), nil
}
