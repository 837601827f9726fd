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

// VersityGWImage is the repository of versitygw's image (an S3 gateway; its posix backend keeps
// objects as files): any tag maps to versitygw built from the Go module proxy
// (hack/versitygw.sh, cached by version), so that backups are tested against a real S3 server
// that runs in the cluster like any other pod.
const VersityGWImage = "versity/versitygw"

var versitygw struct {
	once sync.Once
	path string
	err  error
}

// VersityGW returns the path of a versitygw binary every user can reach, building it the first
// time (about a minute; `make tools` does it ahead of the tests).
func VersityGW() (string, error) {
	versitygw.once.Do(func() {
		root, err := kubeassets.RepoRoot()
		if err != nil {
			versitygw.err = err
			return
		}
		var out, errOut bytes.Buffer
		cmd := exec.Command(filepath.Join(root, "hack", "versitygw.sh"))
		cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&errOut, os.Stderr)
		if err := cmd.Run(); err != nil {
			versitygw.err = fmt.Errorf("building versitygw (hack/versitygw.sh): %w: %s", err, errOut.String())
			return
		}
		cached := strings.TrimSpace(out.String())
		pd, err := ProgramDir(root)
		if err != nil {
			versitygw.err = err
			return
		}
		// The per-user cache is under a private home: copy into the shared program directory.
		dir := filepath.Join(pd, "versitygw")
		if versitygw.err = copyPrograms(filepath.Dir(cached), dir); versitygw.err == nil {
			versitygw.path = filepath.Join(dir, filepath.Base(cached))
		}
	})
	return versitygw.path, versitygw.err
}

// s3Image maps versitygw's image, or says why it cannot run here.
func s3Image(m map[string]Image) {
	bin, err := VersityGW()
	if err != nil {
		m[VersityGWImage] = Image{Err: err}
		return
	}
	m[VersityGWImage] = Image{Entrypoint: []string{bin}, Programs: map[string]string{"versitygw": bin, "/usr/local/bin/versitygw": bin}}
}
