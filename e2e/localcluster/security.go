package localcluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
)

// security is what a container's securityContext (over its Pod's) asks of the node agent,
// which honours it as kubelet and the container runtime do: the process runs as RunAsUser
// and RunAsGroup with the supplemental groups and FSGroup, its root file system is read-only
// when asked, and volumes that support ownership (persistent volumes, emptyDir and the
// API-backed ones) belong to FSGroup, group-readable (and group-writable where writable).
type security struct {
	uid, gid     *int64
	groups       []int64
	readOnlyRoot bool
}

func securityOf(pod *corev1.Pod, c *corev1.Container) security {
	var s security
	if ps := pod.Spec.SecurityContext; ps != nil {
		s.uid, s.gid = ps.RunAsUser, ps.RunAsGroup
		if ps.FSGroup != nil {
			s.groups = append(s.groups, *ps.FSGroup)
		}
		s.groups = append(s.groups, ps.SupplementalGroups...)
	}
	if cs := c.SecurityContext; cs != nil {
		if cs.RunAsUser != nil {
			s.uid = cs.RunAsUser
		}
		if cs.RunAsGroup != nil {
			s.gid = cs.RunAsGroup
		}
		s.readOnlyRoot = cs.ReadOnlyRootFilesystem != nil && *cs.ReadOnlyRootFilesystem
	}
	return s
}

// security is what the container runs as: its securityContext's, else its image's user, as a
// runtime applies an image config's User when the pod names no runAsUser.
func (r *podRunner) security(c *container) security {
	s := securityOf(r.currentPod(), &c.spec)
	img, _ := lookupImage(r.cluster.opts.Images, c.spec.Image)
	if s.uid != nil || img.User == "" {
		return s
	}
	uid, gid, err := numericUser(img.User)
	if err != nil {
		return s // a named user needs the image's /etc/passwd, which no image mapped here has
	}
	s.uid = &uid
	if s.gid == nil && gid != nil {
		s.gid = gid
	}
	return s
}

// numericUser reads an image config's "uid" or "uid:gid".
func numericUser(user string) (int64, *int64, error) {
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	if !hasGroup {
		return uid, nil, nil
	}
	gid, err := strconv.ParseInt(g, 10, 64)
	if err != nil {
		return 0, nil, err
	}
	return uid, &gid, nil
}

// userspec is chroot's --userspec ("" to stay root): a user without a group runs with gid 0,
// as container runtimes do.
func (s security) userspec() string {
	if s.uid == nil {
		return ""
	}
	gid := int64(0)
	if s.gid != nil {
		gid = *s.gid
	}
	return strconv.FormatInt(*s.uid, 10) + ":" + strconv.FormatInt(gid, 10)
}

// groupList is chroot's --groups ("" for none).
func (s security) groupList() string {
	out := make([]string, 0, len(s.groups))
	for _, g := range s.groups {
		out = append(out, strconv.FormatInt(g, 10))
	}
	return strings.Join(out, ",")
}

func fsGroupOf(pod *corev1.Pod) *int64 {
	if ps := pod.Spec.SecurityContext; ps != nil {
		return ps.FSGroup
	}
	return nil
}

// applyFSGroup gives dir and everything in it to group gid, as kubelet's SetVolumeOwnership
// does: files and directories group-readable (group-writable unless readOnly), directories
// setgid so that new files inherit the group. onRootMismatch (the fsGroupChangePolicy the
// operator sets) leaves a directory already owned by gid as it is.
func applyFSGroup(dir string, gid int64, readOnly, onRootMismatch bool) error {
	if st, err := os.Stat(dir); err == nil && onRootMismatch {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int64(sys.Gid) == gid {
			return nil
		}
	}
	mask := fs.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(p, -1, int(gid)); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | mask
		if d.IsDir() {
			mode |= 0o110 | fs.ModeSetgid
		}
		return os.Chmod(p, mode|(info.Mode()&fs.ModeSetgid))
	})
}
