package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// chartDirs are the charts a release packages.
var chartDirs = []string{"charts/valkey-operator", "charts/valkey-cluster"}

// chartPackage is one packaged chart.
type chartPackage struct {
	name, path string
	// pushed is the OCI reference by digest the package was pushed to.
	pushed string
}

// packageCharts packages every chart with helm, its version the release's (without the v)
// and its appVersion the release's: the operator chart's image tag defaults to appVersion,
// so the package pulls the image this release built. helm stamps each file of the package
// with the time of packaging; the package is rewritten with the commit's time instead, so
// that its bytes (and the digest of its OCI artifact's layer) are the commit's.
func packageCharts(o options, rel release, work string) ([]chartPackage, error) {
	var out []chartPackage
	for _, dir := range chartDirs {
		dest := filepath.Join(work, "charts")
		cmd := exec.Command(o.helm, "package", filepath.Join(o.root, dir), "--version", rel.chartVersion, "--app-version", rel.version, "--destination", dest)
		b, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("helm package %s: %w\n%s", dir, err, b)
		}
		// helm names the package NAME-VERSION.tgz after the chart's name.
		name := filepath.Base(dir)
		file := fmt.Sprintf("%s-%s.tgz", name, rel.chartVersion)
		p := chartPackage{name: name, path: filepath.Join(o.out, file)}
		if err := normalizeTgz(filepath.Join(dest, file), p.path, rel.created); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// normalizeTgz copies a gzipped tar, its entries in their order and bytes, with every entry's
// time set to mtime and no access or change time; the gzip header's extra field and comment
// (helm's) are kept, its time is left zero.
func normalizeTgz(src, dst string, mtime time.Time) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Extra, zw.Comment = zr.Extra, zr.Comment
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		h.ModTime, h.AccessTime, h.ChangeTime = mtime, time.Time{}, time.Time{}
		h.Format = tar.FormatUnknown
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// helmDigest is the digest helm push prints for the artifact's manifest.
var helmDigest = regexp.MustCompile(`(?m)^Digest: (sha256:[0-9a-f]{64})$`)

// pushChart pushes a package as an OCI artifact under o.chartPush (oci://ghcr.io/valkey-fsm/charts
// makes oci://ghcr.io/valkey-fsm/charts/NAME:VERSION), with the credentials `helm registry
// login` stored, and returns it by digest.
func pushChart(o options, c chartPackage) (string, error) {
	if !strings.HasPrefix(o.chartPush, "oci://") {
		return "", fmt.Errorf("CHART_PUSH %q is not an oci:// reference", o.chartPush)
	}
	args := []string{"push", c.path, o.chartPush}
	if o.plainHTTP {
		args = append(args, "--plain-http")
	}
	out, err := exec.Command(o.helm, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("helm push %s %s: %w\n%s", filepath.Base(c.path), o.chartPush, err, out)
	}
	m := helmDigest.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("helm push printed no digest:\n%s", out)
	}
	return strings.TrimSuffix(strings.TrimPrefix(o.chartPush, "oci://"), "/") + "/" + c.name + "@" + string(m[1]), nil
}
