package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// Valkey versions the local cluster runs, by image tag: "valkey/valkey:8.0" (and any tag
// without a mapping of its own) is Debian's 8.0 from bookworm-backports, on PATH;
// "valkey/valkey:9.1" is 9.1.2 built from Debian's source package (hack/valkey-9.1.sh, cached by
// version). An image change between them is a real version change, as in a real cluster.
var valkeyRepositories = []string{"valkey/valkey", "docker.io/valkey/valkey", "ghcr.io/valkey-io/valkey"}

// valkeyPrograms are the names a Valkey image's commands use.
var valkeyPrograms = []string{"valkey-server", "valkey-cli", "valkey-benchmark", "valkey-check-rdb", "valkey-check-aof", "valkey-sentinel"}

var valkey91 struct {
	once sync.Once
	dir  string
	err  error
}

// Valkey91Dir returns a directory every user can reach (pods run Valkey as uid 999) holding
// the Valkey 9.1 binaries, building them the first time (about 10 minutes; `make tools` does it
// ahead of the tests).
func Valkey91Dir() (string, error) {
	valkey91.once.Do(func() {
		valkey91.dir, valkey91.err = buildIntoProgramDir("valkey-9.1.sh", "valkey-9.1", func(out string) string { return out })
	})
	return valkey91.dir, valkey91.err
}

// buildIntoProgramDir runs a hack/ script that builds programs into the per-user cache (once:
// the scripts cache by version) and prints a path, and copies the directory from(path) names
// into the shared program directory under sub: the cache is under a private home, and pods run
// as other users. It returns the copy's directory.
func buildIntoProgramDir(script, sub string, from func(printed string) string) (string, error) {
	root, err := kubeassets.RepoRoot()
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "hack", script))
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errOut, os.Stderr)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building with hack/%s: %w: %s", script, err, errOut.String())
	}
	pd, err := ProgramDir(root)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(pd, sub)
	return dir, copyPrograms(from(strings.TrimSpace(out.String())), dir)
}

// copyPrograms copies every file of from into to (mode 0755), skipping those already there
// with the same size.
func copyPrograms(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		si, err := os.Stat(src)
		if err != nil {
			return err
		}
		if di, err := os.Stat(dst); err == nil && di.Size() == si.Size() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, data, 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	return nil
}

// valkeyImages maps the Valkey images: any tag to the binaries on PATH (8.0), and the 9.1 tags
// to the 9.1 build when it can be had.
func valkeyImages(m map[string]Image) error {
	for _, repo := range valkeyRepositories {
		m[repo] = Image{Entrypoint: []string{"valkey-server"}}
	}
	dir, err := Valkey91Dir()
	if err != nil {
		return err
	}
	programs := map[string]string{}
	for _, p := range valkeyPrograms {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			programs[p] = filepath.Join(dir, p)
		}
	}
	for _, repo := range valkeyRepositories {
		for _, tag := range []string{"9.1", "9.1.2"} {
			m[repo+":"+tag] = Image{Entrypoint: []string{programs["valkey-server"]}, Programs: programs}
		}
	}
	return nil
}
