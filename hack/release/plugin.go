package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/valkey-fsm/valkey-operator/internal/version"
)

// platform is one os/arch of the plugin's release.
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
	// binary is the built kubectl-valkey the archive holds (in the build's scratch directory),
	// which the SBOM reads.
	binPath string
}

// buildPlugins builds kubectl-valkey for every platform into work and writes each with the
// LICENSE into its archive in o.out.
func buildPlugins(o options, work string) ([]archive, error) {
	license, err := os.ReadFile(filepath.Join(o.root, "LICENSE"))
	if err != nil {
		return nil, err
	}
	var archives []archive
	for _, spec := range o.platforms {
		osName, arch, ok := strings.Cut(strings.TrimSpace(spec), "/")
		if !ok {
			return nil, fmt.Errorf("platform %q is not os/arch", spec)
		}
		p := platform{osName, arch}
		bin := filepath.Join(work, "plugin", p.os+"-"+p.arch, p.binary())
		// Static, without local paths, stripped: the same source gives the same bytes.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+version.LDFlags(o.version, o.commit), "-o", bin, "./plugin")
		cmd.Dir = o.root
		cmd.Env = append(os.Environ(), "GOOS="+p.os, "GOARCH="+p.arch, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building kubectl-valkey for %s/%s: %w\n%s", p.os, p.arch, err, out)
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		a := archive{platform: p, binPath: bin}
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
			return nil, err
		}
		a.path = filepath.Join(o.out, a.name)
		if err := os.WriteFile(a.path, data, 0o644); err != nil {
			return nil, err
		}
		a.sha256 = sha256Hex(data)
		archives = append(archives, a)
	}
	return archives, nil
}

// writeKrewManifest writes the krew manifest naming the archives to o.out/plugins/valkey.yaml.
func writeKrewManifest(o options, archives []archive) (string, error) {
	manifest, err := krewManifest(o, archives)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.out, "plugins", "valkey.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, manifest, 0o644)
}
