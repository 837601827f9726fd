package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/valkey-fsm/valkey-operator/internal/version"
)

type options struct {
	version, commit, out, downloadBase, root string
	platforms                                []string
}

// platform is one os/arch of the release.
type platform struct{ os, arch string }

func (p platform) binary() string {
	if p.os == "windows" {
		return "kubectl-valkey.exe"
	}
	return "kubectl-valkey"
}

// archive is one platform's archive as written.
type archive struct {
	platform
	name, path, sha256 string
}

type release struct {
	version  string
	archives []archive
	manifest string
}

// semver is what krew accepts as a plugin version: v, then major.minor.patch, then an optional
// pre-release and build.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func build(o options) (release, error) {
	rel := release{version: o.version}
	if !semver.MatchString(o.version) {
		return rel, fmt.Errorf("version %q is not a release version (v1.2.3): krew refuses it; tag the commit, or give VERSION=v1.2.3", o.version)
	}
	if o.commit == "" {
		out, err := exec.Command("git", "-C", o.root, "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			return rel, fmt.Errorf("no -commit and git cannot tell: %w", err)
		}
		o.commit = strings.TrimSpace(string(out))
	}
	license, err := os.ReadFile(filepath.Join(o.root, "LICENSE"))
	if err != nil {
		return rel, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return rel, err
	}
	work, err := os.MkdirTemp("", "release-")
	if err != nil {
		return rel, err
	}
	defer os.RemoveAll(work)
	var sums strings.Builder
	for _, spec := range o.platforms {
		osName, arch, ok := strings.Cut(strings.TrimSpace(spec), "/")
		if !ok {
			return rel, fmt.Errorf("platform %q is not os/arch", spec)
		}
		p := platform{osName, arch}
		bin := filepath.Join(work, p.os+"-"+p.arch, p.binary())
		// Static, without local paths, stripped: the same source gives the same bytes.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+version.LDFlags(o.version, o.commit), "-o", bin, "./plugin")
		cmd.Dir = o.root
		cmd.Env = append(os.Environ(), "GOOS="+p.os, "GOARCH="+p.arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return rel, fmt.Errorf("building kubectl-valkey for %s/%s: %w\n%s", p.os, p.arch, err, out)
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return rel, err
		}
		a := archive{platform: p}
		files := []archiveFile{{name: "LICENSE", mode: 0o644, data: license}, {name: p.binary(), mode: 0o755, data: binary}}
		var data []byte
		if p.os == "windows" {
			a.name = fmt.Sprintf("kubectl-valkey_%s_%s_%s.zip", o.version, p.os, p.arch)
			data, err = zipArchive(files)
		} else {
			a.name = fmt.Sprintf("kubectl-valkey_%s_%s_%s.tar.gz", o.version, p.os, p.arch)
			data, err = tarGzArchive(files)
		}
		if err != nil {
			return rel, err
		}
		a.path = filepath.Join(o.out, a.name)
		if err := os.WriteFile(a.path, data, 0o644); err != nil {
			return rel, err
		}
		sum := sha256.Sum256(data)
		a.sha256 = hex.EncodeToString(sum[:])
		fmt.Fprintf(&sums, "%s  %s\n", a.sha256, a.name)
		rel.archives = append(rel.archives, a)
	}
	if err := os.WriteFile(filepath.Join(o.out, "checksums.txt"), []byte(sums.String()), 0o644); err != nil {
		return rel, err
	}
	manifest, err := krewManifest(o, rel.archives)
	if err != nil {
		return rel, err
	}
	rel.manifest = filepath.Join(o.out, "plugins", "valkey.yaml")
	if err := os.MkdirAll(filepath.Dir(rel.manifest), 0o755); err != nil {
		return rel, err
	}
	return rel, os.WriteFile(rel.manifest, manifest, 0o644)
}
