package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// allPlatforms are the platforms a release covers.
const allPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	var o options
	flag.StringVar(&o.version, "version", os.Getenv("VERSION"), "the release's version, a tag such as v0.3.0 (krew needs semantic versions)")
	flag.StringVar(&o.commit, "commit", os.Getenv("COMMIT"), "the source revision stamped into the binaries")
	platforms := flag.String("platforms", allPlatforms, "comma-separated os/arch pairs")
	flag.StringVar(&o.out, "out", "dist/release", "the release's directory (emptied first)")
	flag.StringVar(&o.downloadBase, "download-base", "https://github.com/valkey-fsm/valkey-operator/releases/download", "the archives' URL is this/VERSION/ARCHIVE")
	krew := flag.String("krew", "", "krew's and validate-krew-manifest's paths, comma-separated (hack/krew.sh); empty: no krew check")
	flag.StringVar(&o.imagePlatforms, "image-platforms", "linux/amd64,linux/arm64", "the image's platforms, as make image takes them (IMAGE_PLATFORMS)")
	flag.StringVar(&o.imagePush, "image-push", "", "push the image's index to this reference, e.g. ghcr.io/valkey-fsm/valkey-operator:v0.3.0 (IMAGE_PUSH; credentials from docker login)")
	flag.StringVar(&o.chartPush, "chart-push", "", "push the chart packages under this OCI repository, e.g. oci://ghcr.io/valkey-fsm/charts (CHART_PUSH; credentials from helm registry login)")
	flag.StringVar(&o.helm, "helm", "", "helm's path (hack/helm.sh --path)")
	flag.Parse()
	o.platforms = strings.Split(*platforms, ",")
	root, err := repoRoot()
	if err != nil {
		return err
	}
	o.root = root
	rel, err := build(o)
	if err != nil {
		return err
	}
	sums, err := os.ReadFile(rel.checksums)
	if err != nil {
		return err
	}
	fmt.Printf("%s (%s):\n%s", o.out, filepath.Base(rel.checksums), sums)
	fmt.Printf("image %s %s (layout %s)\n", rel.image.ref, rel.image.digest, rel.image.layout)
	if rel.image.pushed != "" {
		fmt.Println("pushed", rel.image.pushed)
	}
	for _, c := range rel.charts {
		if c.pushed != "" {
			fmt.Println("pushed", c.pushed)
		}
	}
	if *krew == "" {
		return nil
	}
	bins := strings.Split(*krew, ",")
	if len(bins) != 2 {
		return fmt.Errorf("-krew wants krew's and validate-krew-manifest's paths, got %q", *krew)
	}
	if err := checkWithKrew(rel, bins[0], bins[1]); err != nil {
		return err
	}
	fmt.Printf("krew: the manifest validates and every one of the %d platforms installs from its archive\n", len(rel.archives))
	return nil
}

// repoRoot is the module's directory (go run runs in the caller's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
