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
	flag.StringVar(&o.out, "out", "dist/release", "where the archives, checksums.txt and plugins/valkey.yaml go")
	flag.StringVar(&o.downloadBase, "download-base", "https://github.com/valkey-fsm/valkey-operator/releases/download", "the archives' URL is this/VERSION/ARCHIVE")
	krew := flag.String("krew", "", "krew's and validate-krew-manifest's paths, comma-separated (hack/krew.sh); empty: no krew check")
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
	for _, a := range rel.archives {
		fmt.Printf("%s  %s\n", a.sha256, filepath.Join(o.out, a.name))
	}
	fmt.Println("krew manifest:", rel.manifest)
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
