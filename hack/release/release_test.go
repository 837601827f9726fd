package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAReleaseInstallsWithKrew builds a release of this machine's platform and windows/amd64 (a
// zip) as make release does, checks the manifest with krew's validator, installs each archive
// with krew (hack/krew.sh: krew built from its module) and runs the installed plugin, which
// must say the release's version; a second build of the same platform is the same bytes; a
// version krew would refuse is refused.
func TestAReleaseInstallsWithKrew(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "krew.sh")).Output()
	if err != nil {
		t.Fatalf("hack/krew.sh: %v", err)
	}
	bins := strings.Fields(string(out))
	if len(bins) != 2 {
		t.Fatalf("hack/krew.sh printed %q", out)
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	o := options{version: "v0.0.0-test.1", commit: "abc1234", out: t.TempDir(), downloadBase: "https://example.invalid/releases", root: root,
		platforms: []string{host, "windows/amd64"}}
	rel, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWithKrew(rel, bins[0], bins[1]); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(o.out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range rel.archives {
		if !strings.Contains(string(sums), a.sha256+"  "+a.name+"\n") {
			t.Errorf("checksums.txt lacks %s %s:\n%s", a.sha256, a.name, sums)
		}
	}
	manifest, err := os.ReadFile(rel.manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), "uri: https://example.invalid/releases/v0.0.0-test.1/kubectl-valkey_v0.0.0-test.1_windows_amd64.zip") {
		t.Errorf("the manifest does not name the windows archive's URL:\n%s", manifest)
	}
	// The tar.gz holds exactly the binary (executable) and the LICENSE.
	data, err := os.ReadFile(rel.archives[0].path)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "kubectl-valkey" && h.Mode&0o111 == 0 {
			t.Errorf("kubectl-valkey is not executable in the archive: %o", h.Mode)
		}
	}
	if strings.Join(names, " ") != "LICENSE kubectl-valkey" {
		t.Errorf("the archive holds %v", names)
	}

	again := o
	again.out, again.platforms = t.TempDir(), []string{host}
	rel2, err := build(again)
	if err != nil {
		t.Fatal(err)
	}
	if rel2.archives[0].sha256 != rel.archives[0].sha256 {
		t.Errorf("two builds of the same release differ: %s, %s", rel.archives[0].sha256, rel2.archives[0].sha256)
	}

	bad := o
	bad.version, bad.out = "abc1234-dirty", t.TempDir()
	if _, err := build(bad); err == nil || !strings.Contains(err.Error(), "not a release version") {
		t.Errorf("a version krew refuses was accepted: %v", err)
	}
}
