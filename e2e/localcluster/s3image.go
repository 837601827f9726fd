package localcluster

import (
	"path/filepath"
	"sync"
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
		var dir string
		dir, versitygw.err = buildIntoProgramDir("versitygw.sh", "versitygw", filepath.Dir)
		versitygw.path = filepath.Join(dir, "versitygw")
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
