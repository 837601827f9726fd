package netfault

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// runNft applies a script with `nft -f -`. nft applies a script as one transaction, so a
// script either takes effect completely or not at all.
func runNft(script string) error {
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("netfault: nft -f -: %w: %s\nscript:\n%s", err, strings.TrimSpace(stderr.String()), script)
	}
	return nil
}

// nftOutput runs nft with arguments and returns its standard output.
func nftOutput(args ...string) (string, error) {
	cmd := exec.Command("nft", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("netfault: nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// isNotFound tells whether an nft error says the object does not exist (ENOENT).
func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "No such file or directory")
}
