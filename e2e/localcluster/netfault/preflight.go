package netfault

import (
	"errors"
	"os"
	"os/exec"
)

// ErrNotRoot is returned when the process is not root. Changing nftables rules needs
// CAP_NET_ADMIN; the effective user id is what we can check cheaply and portably.
var ErrNotRoot = errors.New("netfault: changing nftables rules needs root (CAP_NET_ADMIN); run as root")

// ErrNoNft is returned when the nft command is missing.
var ErrNoNft = errors.New("netfault: the nft command is not in PATH; install the nftables package (apt-get install nftables)")

// preflight tells, before anything is changed, why this process cannot manage tables.
func preflight() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return ErrNoNft
	}
	return nil
}
