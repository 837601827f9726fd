package netfault

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
)

// tableLine matches a line of `nft list tables` naming one of our tables; the last field of
// the name is the pid of the process that created it.
var tableLine = regexp.MustCompile(`(?m)^table (\w+) (` + TablePrefix + `\w*_(\d+))$`)

// SweepStale deletes the tables vkfsm_*_<pid> whose process no longer runs: leftovers of a
// test binary that crashed or was killed by a timeout before its cleanups ran. Tables of
// running processes, this one included, are kept. Pids are those of this pid namespace.
func SweepStale() error {
	if err := preflight(); err != nil {
		return err
	}
	out, err := nftOutput("list", "tables")
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range tableLine.FindAllStringSubmatch(out, -1) {
		fam, name := m[1], m[2]
		pid, err := strconv.Atoi(m[3])
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if err := runNft(fmt.Sprintf("delete table %s %s\n", fam, name)); err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// alive tells whether a process with that pid exists. Signal 0 checks existence and
// permission without sending anything; EPERM means it exists but belongs to someone else.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
