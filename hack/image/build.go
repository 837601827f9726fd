package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/valkey-fsm/valkey-operator/internal/version"
)

// operatorPackage is the operator's main package, relative to the module root.
const operatorPackage = "./operator"

// buildOperator compiles the operator for one platform into dir and returns the binary's path.
// The binary must run with no libc and no files from a base image: CGO off; -trimpath keeps
// the build machine's paths out (and so out of the digest); -s -w drops the symbol table and
// DWARF, which stack traces do not need.
func buildOperator(root, dir string, p v1.Platform, ver, commit string) (string, error) {
	bin := filepath.Join(dir, fmt.Sprintf("valkey-operator-%s-%s%s", p.OS, p.Architecture, strings.ReplaceAll(p.Variant, "/", "")))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w "+version.LDFlags(ver, commit), "-o", bin, operatorPackage)
	cmd.Dir = root
	env := []string{"CGO_ENABLED=0", "GOOS=" + p.OS, "GOARCH=" + p.Architecture}
	if p.Architecture == "arm" && p.Variant != "" {
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s for %s: %w\n%s", operatorPackage, p.String(), err, out)
	}
	return bin, nil
}
