package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type options struct {
	version, commit, out, downloadBase, root string
	// platforms are the plugin's (os/arch).
	platforms []string
	// imagePlatforms are the image's, as hack/image takes them ("linux/amd64,linux/arm64", "host").
	imagePlatforms string
	// imagePush is where the image's index is pushed (registry/repo:tag); empty: not pushed.
	imagePush string
	// chartPush is the OCI repository the chart packages are pushed under
	// (oci://ghcr.io/valkey-fsm/charts); empty: not pushed.
	chartPush string
	// plainHTTP pushes the charts over HTTP: a registry on loopback without TLS (the tests').
	plainHTTP bool
	// helm is helm's path (hack/helm.sh --path).
	helm string
}

type release struct {
	version string
	// chartVersion is the charts' version: the release's without its v (0.3.0), as Helm
	// repositories and `helm install --version` spell chart versions.
	chartVersion string
	created      time.Time
	archives     []archive
	manifest     string
	image        image
	charts       []chartPackage
	crds, sbom   string
	checksums    string
}

// semver is what krew and Helm accept as a version: v, then major.minor.patch, then an
// optional pre-release and build.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func build(o options) (release, error) {
	rel := release{version: o.version, chartVersion: strings.TrimPrefix(o.version, "v")}
	if !semver.MatchString(o.version) {
		return rel, fmt.Errorf("version %q is not a release version (v1.2.3): krew and Helm refuse it; tag the commit, or give VERSION=v1.2.3", o.version)
	}
	if o.helm == "" {
		return rel, fmt.Errorf("no helm (-helm, hack/helm.sh --path): the charts are packaged with it")
	}
	if o.commit == "" {
		out, err := exec.Command("git", "-C", o.root, "rev-parse", "--short", "HEAD").Output()
		if err != nil {
			return rel, fmt.Errorf("no -commit and git cannot tell: %w", err)
		}
		o.commit = strings.TrimSpace(string(out))
	}
	var err error
	// The image is built by hack/image in the module's directory: give it no relative path.
	if o.out, err = filepath.Abs(o.out); err != nil {
		return rel, err
	}
	if rel.created, err = sourceDate(o.root); err != nil {
		return rel, err
	}
	if err := freshDir(o.root, o.out); err != nil {
		return rel, err
	}
	work, err := os.MkdirTemp("", "release-")
	if err != nil {
		return rel, err
	}
	defer os.RemoveAll(work)

	if rel.archives, err = buildPlugins(o, work); err != nil {
		return rel, err
	}
	if rel.manifest, err = writeKrewManifest(o, rel.archives); err != nil {
		return rel, err
	}
	if rel.image, err = buildImage(o, rel.created); err != nil {
		return rel, err
	}
	if rel.charts, err = packageCharts(o, rel, work); err != nil {
		return rel, err
	}
	if rel.crds, err = writeCRDs(o); err != nil {
		return rel, err
	}
	var binaries []sbomBinary
	for _, b := range rel.image.binaries {
		binaries = append(binaries, sbomBinary{name: "valkey-operator", platform: b.platform, path: b.path})
	}
	for _, a := range rel.archives {
		binaries = append(binaries, sbomBinary{name: "kubectl-valkey", platform: a.os + "/" + a.arch, path: a.binPath})
	}
	if rel.sbom, err = writeSBOM(o, rel.created, binaries); err != nil {
		return rel, err
	}
	files := []string{rel.manifest, rel.image.archive, rel.crds, rel.sbom}
	for _, a := range rel.archives {
		files = append(files, a.path)
	}
	for _, c := range rel.charts {
		files = append(files, c.path)
	}
	if rel.checksums, err = writeChecksums(o.out, files); err != nil {
		return rel, err
	}
	// Pushed last: nothing reaches a registry unless every file of the release was built.
	if o.imagePush != "" {
		if rel.image.pushed, err = pushImage(o, rel); err != nil {
			return rel, err
		}
	}
	if o.chartPush != "" {
		for i := range rel.charts {
			if rel.charts[i].pushed, err = pushChart(o, rel.charts[i]); err != nil {
				return rel, err
			}
		}
	}
	return rel, nil
}

// sourceDate is the time every archive and package says its files were made: the commit's,
// so that rebuilding the commit changes nothing (SOURCE_DATE_EPOCH wins, as reproducible
// builds expect). hack/image takes the image's creation time the same way.
func sourceDate(root string) (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%ct").Output()
		if err != nil {
			return time.Time{}, fmt.Errorf("no SOURCE_DATE_EPOCH and git cannot tell the commit's time: %w", err)
		}
		epoch = strings.TrimSpace(string(out))
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("source date %q: %w", epoch, err)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// freshDir empties out (the release directory), so that nothing of an earlier release is
// attached with this one; it refuses a directory that holds the module itself.
func freshDir(root, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err == nil || abs == root || abs == "/" {
		return fmt.Errorf("-out %s holds the source tree; give a directory of its own (dist/release)", out)
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	return os.MkdirAll(abs, 0o755)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
