package localcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
)

// ProgramDir is a directory for programs that pods run as non-root users (the operator's
// chart runs it as 65532, Pod Security "restricted"): every user must be able to reach it,
// which a checkout under a private directory (/root is 0700, many homes 0750) is not. One
// directory per checkout (root), under /var/tmp.
func ProgramDir(root string) (string, error) {
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join("/var/tmp", "valkey-fsm-e2e", hex.EncodeToString(sum[:4]))
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}
