package main

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is distroless's "nonroot" user and group, which the chart's securityContext also
// names: the image runs as it even where a pod sets no user.
const nonRoot = "65532:65532"

// meta is what the labels and annotations say about the build.
type meta struct {
	Version, Commit, Source, Licenses string
	// Created is the commit's time, not the build's, so that rebuilding changes nothing.
	Created time.Time
}

// labels are the OCI annotation keys (image-spec annotations.md) as image config labels,
// where registries and scanners look; the empty ones are left out.
func (m meta) labels() map[string]string {
	out := map[string]string{
		"org.opencontainers.image.title":       "valkey-operator",
		"org.opencontainers.image.description": "A Kubernetes operator for Valkey built around an explicit, persisted state machine per cluster",
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.revision":    m.Commit,
		"org.opencontainers.image.source":      m.Source,
		"org.opencontainers.image.licenses":    m.Licenses,
		"org.opencontainers.image.created":     m.Created.UTC().Format(time.RFC3339),
	}
	for k, v := range out {
		if v == "" {
			delete(out, k)
		}
	}
	return out
}

// platformImage is the image of one platform: the empty base plus the binary's layer.
func platformImage(layer v1.Layer, p v1.Platform, m meta) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: m.Created},
			CreatedBy: "make image (hack/image): COPY valkey-operator /valkey-operator",
			Comment:   "valkey-operator " + m.Version,
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: m.Created}
	cf.Author = ""
	cf.Config = v1.Config{
		User:       nonRoot,
		Entrypoint: []string{entrypoint},
		WorkingDir: "/",
		Labels:     m.labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// index is the multi-platform image: one manifest per platform, in the order given.
func index(images []v1.Image, platforms []v1.Platform, m meta) (v1.ImageIndex, error) {
	if len(images) != len(platforms) {
		return nil, fmt.Errorf("%d images for %d platforms", len(images), len(platforms))
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		p := platforms[i]
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &p},
		})
	}
	anns := m.labels()
	delete(anns, "org.opencontainers.image.description")
	return mutate.Annotations(idx, anns).(v1.ImageIndex), nil
}
