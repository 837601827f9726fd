package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// checkWithKrew checks the release as krew's index and a user's krew would: the manifest passes
// validate-krew-manifest (its install step skipped: it downloads the archives from their
// release URL), then krew installs every platform's archive from disk (krew install --manifest
// --archive checks the archive's sha256 against the manifest and extracts the files it names)
// into a root of its own, and the installed plugin of this machine's platform runs and says
// the release's version.
func checkWithKrew(rel release, krew, validator string) error {
	if out, err := exec.Command(validator, "-manifest", rel.manifest, "-skip-install").CombinedOutput(); err != nil {
		return fmt.Errorf("validate-krew-manifest: %w\n%s", err, out)
	}
	for _, a := range rel.archives {
		root, err := os.MkdirTemp("", "krew-root-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(root)
		cmd := exec.Command(krew, "install", "--manifest="+rel.manifest, "--archive="+a.path)
		cmd.Env = []string{"KREW_ROOT=" + root, "KREW_OS=" + a.os, "KREW_ARCH=" + a.arch, "HOME=" + root, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("krew install of %s: %w\n%s", a.name, err, out)
		}
		dir := filepath.Join(root, "store", "valkey", rel.version)
		for _, f := range []string{a.binary(), "LICENSE"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("krew install of %s left no %s: %w", a.name, f, err)
			}
		}
		if a.os != runtime.GOOS || a.arch != runtime.GOARCH {
			continue
		}
		// What users type: krew links the plugin into its bin directory.
		out, err := exec.Command(filepath.Join(root, "bin", a.binary()), "version", "--kubeconfig", filepath.Join(root, "no-such-kubeconfig")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), rel.version) {
			return fmt.Errorf("the plugin krew installed from %s does not say it is %s: %v\n%s", a.name, rel.version, err, out)
		}
	}
	return nil
}
