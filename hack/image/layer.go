package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entrypoint is where the binary lives in the image, and what the image runs.
const entrypoint = "/valkey-operator"

// binaryLayer is a layer holding only the binary at entrypoint. Its tar is built here rather
// than from the file system so that nothing of the build machine gets in: owner root, mode
// 0755, the given time, no user or group names, PAX-free USTAR headers. gzip output is a
// function of its input and level, so the compressed digest is fixed too.
func binaryLayer(bin string, mtime time.Time) (v1.Layer, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     entrypoint[1:],
		Mode:     0o755,
		Size:     int64(len(data)),
		ModTime:  mtime.UTC().Truncate(time.Second),
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
