package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// BuildOperatorImage builds the operator's image from the checkout at root as `make image`
// does (hack/image), for this machine's platform only, and returns its OCI layout: the suites
// run the operator from what users pull, not from a binary built some other way. The Go build
// cache makes a rebuild of an unchanged tree a link and a re-pack (seconds), and the result
// has the same digest, so the unpacked root file system is re-used (LoadOCILayout).
//
// Test packages that run in parallel share root/.cache/image under a lock: each waits for the
// other's build and then builds (finding everything cached) rather than write the same layout
// at the same time.
func BuildOperatorImage(root string) (string, error) {
	out := filepath.Join(root, ".cache", "image")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(out, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "run", "./hack/image", "-platforms", "host", "-out", out)
	cmd.Dir = root
	// The chart's reference, whatever a caller's environment says to push or name.
	cmd.Env = append(os.Environ(), "IMAGE=", "IMAGE_PUSH=", "IMAGE_PLATFORMS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the operator's image (go run ./hack/image): %w\n%s", err, b)
	}
	return filepath.Join(out, "oci"), nil
}
