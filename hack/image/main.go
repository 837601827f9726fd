package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// defaultPlatforms are the platforms a release image holds (IMAGE_PLATFORMS overrides).
const defaultPlatforms = "linux/amd64,linux/arm64"

// source is where the image says its code is (org.opencontainers.image.source).
const source = "https://github.com/valkey-fsm/valkey-operator"

func main() {
	var o options
	flag.StringVar(&o.out, "out", envOr("IMAGE_OUT", "dist/image"), "output directory: OUT/oci (OCI layout) and OUT/valkey-operator.oci.tar (IMAGE_OUT)")
	flag.StringVar(&o.platforms, "platforms", envOr("IMAGE_PLATFORMS", defaultPlatforms), `comma-separated platforms, or "host" (IMAGE_PLATFORMS)`)
	flag.StringVar(&o.version, "version", os.Getenv("VERSION"), "version to stamp (VERSION; default git describe --tags --always --dirty)")
	flag.StringVar(&o.commit, "commit", os.Getenv("COMMIT"), "commit to stamp (COMMIT; default git rev-parse --short HEAD)")
	flag.StringVar(&o.ref, "ref", os.Getenv("IMAGE"), "image reference the layout is tagged with (IMAGE; default the operator chart's image)")
	flag.StringVar(&o.push, "push", os.Getenv("IMAGE_PUSH"), "push the index to this reference, e.g. ghcr.io/you/valkey-operator:v0.3.0 (IMAGE_PUSH)")
	printRef := flag.Bool("print-ref", false, "print the image reference the layout would be tagged with, and exit (the chart's test compares it with what helm renders)")
	flag.Parse()
	if *printRef {
		ref, err := reference("", o.ref)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(1)
		}
		fmt.Println(ref.Name())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	res, err := build(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s\n  layout:  %s\n  archive: %s\n", res.ref, res.digest, res.layout, res.archive)
	if res.pushed != "" {
		fmt.Printf("  pushed:  %s\n", res.pushed)
	}
}

type options struct {
	out, platforms, version, commit, ref, push string
	// root is the module's root; empty means the current directory's git top level.
	root string
}

type result struct {
	ref, digest, layout, archive, pushed string
}

func build(ctx context.Context, o options) (result, error) {
	root, err := moduleRoot(o.root)
	if err != nil {
		return result{}, err
	}
	platforms, err := parsePlatforms(o.platforms)
	if err != nil {
		return result{}, err
	}
	m, err := buildMeta(root, o)
	if err != nil {
		return result{}, err
	}
	tagged, err := reference(root, o.ref)
	if err != nil {
		return result{}, err
	}
	out := o.out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	bins := filepath.Join(out, "bin")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		return result{}, err
	}
	images := make([]v1.Image, 0, len(platforms))
	for _, p := range platforms {
		bin, err := buildOperator(root, bins, p, m.Version, m.Commit)
		if err != nil {
			return result{}, err
		}
		layer, err := binaryLayer(bin, m.Created)
		if err != nil {
			return result{}, err
		}
		img, err := platformImage(layer, p, m)
		if err != nil {
			return result{}, err
		}
		images = append(images, img)
	}
	idx, err := index(images, platforms, m)
	if err != nil {
		return result{}, err
	}
	d, err := idx.Digest()
	if err != nil {
		return result{}, err
	}
	res := result{ref: tagged.Name(), digest: d.String(), layout: filepath.Join(out, "oci"), archive: filepath.Join(out, "valkey-operator.oci.tar")}
	if err := writeLayout(res.layout, idx, tagged); err != nil {
		return result{}, err
	}
	if err := writeArchive(res.layout, res.archive, m.Created); err != nil {
		return result{}, err
	}
	if o.push != "" {
		if res.pushed, err = push(ctx, idx, o.push); err != nil {
			return result{}, fmt.Errorf("pushing %s: %w", o.push, err)
		}
	}
	return res, nil
}

func moduleRoot(root string) (string, error) {
	if root != "" {
		return root, nil
	}
	return git("", "rev-parse", "--show-toplevel")
}

// reference is the tag the image is named by: ref when given, else the chart's image.
func reference(root, ref string) (name.Tag, error) {
	root, err := moduleRoot(root)
	if err != nil {
		return name.Tag{}, err
	}
	if ref == "" {
		repo, tag, err := chartImage(root)
		if err != nil {
			return name.Tag{}, err
		}
		ref = repo + ":" + tag
	}
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	return t, nil
}

// parsePlatforms reads "linux/amd64,linux/arm64/v8"; "host" is the platform of this machine
// (what the local cluster runs).
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "host" {
			f = "linux/" + runtime.GOARCH
		}
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, err
		}
		if p.OS != "linux" {
			return nil, fmt.Errorf("platform %s: the operator's image is for linux only", f)
		}
		if seen[p.String()] {
			continue
		}
		seen[p.String()] = true
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform in %q", s)
	}
	return out, nil
}

// buildMeta fills in what the flags left empty from git: the version as git describe says it
// (a tag, else the short commit, -dirty with uncommitted changes), the commit, and the
// commit's time as the creation time (SOURCE_DATE_EPOCH wins, as reproducible builds expect).
func buildMeta(root string, o options) (meta, error) {
	m := meta{Version: o.version, Commit: o.commit, Source: source, Licenses: licenses(root)}
	var err error
	if m.Version == "" {
		if m.Version, err = git(root, "describe", "--tags", "--always", "--dirty"); err != nil {
			return meta{}, err
		}
	}
	if m.Commit == "" {
		if m.Commit, err = git(root, "rev-parse", "--short", "HEAD"); err != nil {
			return meta{}, err
		}
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = git(root, "log", "-1", "--format=%ct"); err != nil {
			return meta{}, err
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return meta{}, fmt.Errorf("creation time %q: %w", epoch, err)
	}
	m.Created = time.Unix(secs, 0).UTC()
	return m, nil
}

// licenses is the SPDX identifier of the repository's licence when a LICENSE file states one
// (an "SPDX-License-Identifier:" line); the label is left out rather than guessed.
func licenses(root string) string {
	for _, f := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "SPDX-License-Identifier:"); ok {
				return strings.TrimSpace(id)
			}
		}
	}
	return ""
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
