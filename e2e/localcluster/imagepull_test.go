package localcluster

import (
	"net"
	"strings"
	"testing"
)

// TestPullImageFailsWhereARegistryWould: mapped images are there; a registry whose host
// cannot exist, a loopback registry nobody listens on and a tag of a repository the cluster
// holds other tags of fail as containerd says; a reference that does not parse is an invalid
// name; other images are taken to exist.
func TestPullImageFailsWhereARegistryWould(t *testing.T) {
	// A port nobody listens on: one that was just free.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	images := map[string]Image{
		"valkey/valkey": {},
		"ghcr.io/valkey-fsm/valkey-operator:0.1.0": {},
		"registry.test/mapped":                     {},
	}
	for _, c := range []struct{ image, reason, says string }{
		{"valkey/valkey:8.0", "", ""},
		{"registry.test/mapped:1", "", ""},
		{"ghcr.io/valkey-fsm/valkey-operator:0.1.0", "", ""},
		{"busybox:1.36", "", ""},
		{open.Addr().String() + "/x:1", "", ""},
		{"registry.invalid/x:0", "ErrImagePull", `failed to pull and unpack image "registry.invalid/x:0": failed to resolve reference "registry.invalid/x:0": failed to do request: Head "https://registry.invalid/v2/x/manifests/0": dial tcp: lookup registry.invalid: no such host`},
		{"quay.example/x:0", "ErrImagePull", "lookup quay.example: no such host"},
		{"registry.example.com/team/x:0", "ErrImagePull", "no such host"},
		{"x.localhost:5000/x", "ErrImagePull", "lookup x.localhost: no such host"},
		{closed + "/x:0", "ErrImagePull", "dial tcp " + closed + ": connect: connection refused"},
		{"ghcr.io/valkey-fsm/valkey-operator:0.1.1", "ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "ghcr.io/valkey-fsm/valkey-operator:0.1.1": failed to resolve reference "ghcr.io/valkey-fsm/valkey-operator:0.1.1": ghcr.io/valkey-fsm/valkey-operator:0.1.1: not found`},
		{"Upper/Case:1", "InvalidImageName", `couldn't parse image reference "Upper/Case:1": invalid reference format`},
	} {
		reason, msg := pullImage(images, c.image)
		if reason != c.reason || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q %q, want %q saying %q", c.image, reason, msg, c.reason, c.says)
		}
	}
}
