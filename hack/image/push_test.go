package main

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// IMAGE_PUSH sends the whole index to a registry (go-containerregistry's registry server, on
// loopback): pulled back, it is the digest the layout holds, with the host's platform in it.
func TestPushWritesTheIndex(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	// No credentials stored for this registry: the default keychain goes anonymous.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	ref := strings.TrimPrefix(srv.URL, "http://") + "/team/valkey-operator:v9.8.7-test"
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	res, err := build(context.Background(), options{root: root, out: t.TempDir(), platforms: "host", version: "v9.8.7-test", commit: "abc1234", push: ref})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.pushed, "@"+res.digest) {
		t.Errorf("pushed %s, built %s", res.pushed, res.digest)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil || d.String() != res.digest {
		t.Fatalf("the registry serves %s (%v), the layout holds %s", d, err, res.digest)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("pulled index: %+v %v", im, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if cf, err := img.ConfigFile(); err != nil || cf.Config.User != "65532:65532" {
		t.Errorf("pulled image config: %+v %v", cf, err)
	}
}
