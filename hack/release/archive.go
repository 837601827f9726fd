package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"time"
)

// archiveFile is one file of an archive, at its top level.
type archiveFile struct {
	name string
	mode int64
	data []byte
}

// epoch is every archived file's time: an archive of the same files is the same bytes (its
// sha256, published in the krew manifest, does not depend on when it was built). 1980 is the
// earliest time a zip file can hold.
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func tarGzArchive(files []archiveFile) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR, Uname: "root", Gname: "root"}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func zipArchive(files []archiveFile) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
		h.SetMode(0o644)
		if f.mode&0o111 != 0 {
			h.SetMode(0o755)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
