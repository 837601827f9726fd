package localcluster

import (
	"errors"
	"os"
	"path"
	"strings"
)

// resolveInRoot resolves p as the container will see it: symlinks are followed with "/"
// meaning the container's root, not the host's. The container's root starts as a view of the
// host's, so resolving against the host's files gives the same answer, and the launcher can
// then create the mount point under its root without following an absolute link (Debian's
// /var/run -> /run) out to the host.
func resolveInRoot(p string) (string, error) {
	const maxLinks = 40
	var done []string
	rest := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := "/" + path.Join(append(append([]string{}, done...), name)...)
		target, err := os.Readlink(cur)
		if err != nil {
			// Not a link, or not there yet (the launcher creates it): take it as it is.
			done = append(done, name)
			continue
		}
		links++
		if links > maxLinks {
			return "", errors.New("too many symbolic links resolving " + p)
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
	}
	return "/" + path.Join(done...), nil
}
