package operatorsuite

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/internal/kubeassets"
)

// previousCommit is the last commit before v1beta1: its chart installs CRDs that serve and
// store v1alpha1 only (from crds/, which Helm never upgrades), and its operator reads and
// writes v1alpha1. Upgrading from it is what every installation of that time goes through.
const previousCommit = "643b54dac5e8d22e12e059e09d6bb4d15636cba4"

// previousRelease is a release of an older commit, built as make image builds the current one.
type previousRelease struct {
	// Chart is its charts/valkey-operator.
	Chart string
	// Image is its operator's image, unpacked; ImageRef names it (a tag of its own, so that
	// the local cluster maps the current chart's image and this one apart).
	Image    *localcluster.LayoutImage
	ImageRef string
}

// buildPreviousRelease extracts the chart of commit and builds its operator's image, once per
// machine: both are kept under the per-user tool cache (hack/cache-dir.sh) keyed by the
// commit, so a clean clone (CI's) builds them once and later runs need no git history.
// Concurrent callers wait on a lock for the first one's build.
func buildPreviousRelease(t *testing.T, commit string) previousRelease {
	t.Helper()
	root, err := kubeassets.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cacheDir, err := exec.Command(filepath.Join(root, "hack", "cache-dir.sh")).Output()
	if err != nil {
		t.Fatalf("hack/cache-dir.sh: %v", err)
	}
	short := commit[:7]
	dir := filepath.Join(strings.TrimSpace(string(cacheDir)), "operator-"+short)
	ref := "ghcr.io/valkey-fsm/valkey-operator:" + short
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); err != nil {
		if err := buildRelease(root, commit, ref, dir); err != nil {
			t.Fatalf("building the release of %s: %v", short, err)
		}
		if err := os.WriteFile(done, []byte(commit+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := localcluster.LoadOCILayout(filepath.Join(dir, "image", "oci"))
	if err != nil {
		t.Fatal(err)
	}
	if img.Name != ref {
		t.Fatalf("the cached image of %s is named %s, want %s", short, img.Name, ref)
	}
	return previousRelease{Chart: filepath.Join(dir, "chart"), Image: img, ImageRef: ref}
}

// buildRelease writes commit's tree (git archive) into a scratch directory, builds its image
// there with its own hack/image, and moves the image and the chart into dir.
func buildRelease(root, commit, ref, dir string) error {
	src := filepath.Join(dir, "src")
	_ = os.RemoveAll(src)
	defer func() { _ = os.RemoveAll(src) }()
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	epoch, err := gitOut(root, "log", "-1", "--format=%ct", commit)
	if err != nil {
		return fmt.Errorf("%w (a shallow clone lacks the commit: git fetch --unshallow)", err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, out)
	}
	// hack/image finds the module's root with git: an empty repository is enough, and the
	// version, commit and time it would ask git for are given.
	if out, err := exec.Command("git", "-C", src, "init", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %w\n%s", err, out)
	}
	build := exec.Command("go", "run", "./hack/image", "-platforms", "host", "-out", filepath.Join(src, "out"))
	build.Dir = src
	build.Env = append(os.Environ(), "IMAGE="+ref, "IMAGE_PUSH=", "IMAGE_PLATFORMS=",
		"VERSION="+commit[:7], "COMMIT="+commit[:7], "SOURCE_DATE_EPOCH="+epoch)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go run ./hack/image: %w\n%s", err, out)
	}
	// The layout is what the local cluster runs (the archive and binaries beside it are the
	// same image again).
	_ = os.RemoveAll(filepath.Join(dir, "image"))
	if err := os.MkdirAll(filepath.Join(dir, "image"), 0o755); err != nil {
		return err
	}
	for from, to := range map[string]string{filepath.Join(src, "out", "oci"): filepath.Join(dir, "image", "oci"), filepath.Join(src, "charts", "valkey-operator"): filepath.Join(dir, "chart")} {
		_ = os.RemoveAll(to)
		if err := os.Rename(from, to); err != nil {
			return err
		}
	}
	return nil
}

func gitOut(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
