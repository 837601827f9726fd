package localcluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// volumeFile is one file of a ConfigMap, Secret, downward API or projected volume.
type volumeFile struct {
	data []byte
	mode os.FileMode
}

// podVolumes resolves each of a Pod's volumes to a directory on this machine. Directories
// that hold API data (ConfigMap, Secret, projected, downward API) are rewritten by refresh,
// as kubelet does, so changes reach running containers without a restart.
type podVolumes struct {
	dir    string            // the Pod's volume directory
	paths  map[string]string // volume name -> host path
	tokens map[string]time.Time
	// written is the digest of what each API-backed volume was last given: an unchanged
	// payload is not compared with the files again. The comparison alone could not tell:
	// with an fsGroup the files' modes differ from the payload's once the group is applied,
	// and every refresh rewrote every volume of every Pod (a fifth of the test process's CPU
	// in the mass failover benchmark).
	written map[string][sha256.Size]byte
}

func (r *podRunner) setUpVolumes(ctx context.Context) error {
	r.vols = &podVolumes{dir: filepath.Join(r.dir, "volumes"), paths: map[string]string{}, tokens: map[string]time.Time{}, written: map[string][sha256.Size]byte{}}
	for _, v := range r.currentPod().Spec.Volumes {
		p, err := r.volumePath(ctx, v)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		r.vols.paths[v.Name] = p
		if gid := fsGroupOf(r.currentPod()); gid != nil && (v.PersistentVolumeClaim != nil || v.EmptyDir != nil) {
			onRootMismatch := r.currentPod().Spec.SecurityContext.FSGroupChangePolicy != nil &&
				*r.currentPod().Spec.SecurityContext.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch
			if err := applyFSGroup(p, *gid, false, onRootMismatch); err != nil {
				return fmt.Errorf("volume %s: fsGroup: %w", v.Name, err)
			}
		}
	}
	return r.refreshVolumes(ctx, true)
}

func (r *podRunner) volumePath(ctx context.Context, v corev1.Volume) (string, error) {
	switch {
	case v.PersistentVolumeClaim != nil:
		pvc, err := r.cs.CoreV1().PersistentVolumeClaims(r.currentPod().Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
			return "", fmt.Errorf("claim %s is not bound yet", pvc.Name)
		}
		pv, err := r.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		switch {
		case pv.Spec.HostPath != nil:
			return pv.Spec.HostPath.Path, nil
		case pv.Spec.Local != nil:
			return pv.Spec.Local.Path, nil
		}
		return "", fmt.Errorf("persistent volume %s is neither hostPath nor local", pv.Name)
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	default:
		// emptyDir and every API-backed volume get a directory of the Pod's own.
		p := filepath.Join(r.vols.dir, v.Name)
		return p, os.MkdirAll(p, 0o777)
	}
}

// refreshVolumes (re)writes the API-backed volumes whose content changed. The first call
// fails on a missing non-optional source, as kubelet keeps such a Pod from starting.
func (r *podRunner) refreshVolumes(ctx context.Context, first bool) error {
	from := r.sources(ctx, first)
	for _, v := range r.currentPod().Spec.Volumes {
		files, err := r.volumeFiles(ctx, v, from)
		if err != nil {
			if first {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			continue
		}
		if files == nil {
			continue
		}
		sum := digest(files)
		if last, ok := r.vols.written[v.Name]; ok && last == sum {
			continue
		}
		if err := writeAtomic(r.vols.paths[v.Name], files); err != nil {
			return err
		}
		if gid := fsGroupOf(r.currentPod()); gid != nil {
			if err := applyFSGroup(r.vols.paths[v.Name], *gid, true, false); err != nil {
				return err
			}
		}
		r.vols.written[v.Name] = sum
	}
	return nil
}

// digest sums a volume's payload: names, modes and contents, in name order.
func digest(files map[string]volumeFile) [sha256.Size]byte {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		f := files[name]
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00", name, f.mode, len(f.data))
		h.Write(f.data)
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

func defaultMode(m *int32, def int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return os.FileMode(def)
}

// sources reads the ConfigMaps and Secrets volumes are made of: from the agent's caches once
// they are synced, except at a container's start (first), which reads the API server so that
// a Pod created right after its ConfigMap does not start without it.
type sources struct {
	ctx   context.Context
	cs    kubernetes.Interface
	agent *agent
	live  bool
}

func (r *podRunner) sources(ctx context.Context, first bool) sources {
	a := r.cluster.agent
	return sources{ctx: ctx, cs: r.cs, agent: a, live: first || a == nil || !a.cachesSynced()}
}

func (s sources) configMap(ns, name string) (*corev1.ConfigMap, error) {
	if s.live {
		return s.cs.CoreV1().ConfigMaps(ns).Get(s.ctx, name, metav1.GetOptions{})
	}
	return s.agent.configMaps.ConfigMaps(ns).Get(name)
}

func (s sources) secret(ns, name string) (*corev1.Secret, error) {
	if s.live {
		return s.cs.CoreV1().Secrets(ns).Get(s.ctx, name, metav1.GetOptions{})
	}
	return s.agent.secrets.Secrets(ns).Get(name)
}

// volumeFiles returns the files an API-backed volume should hold, or nil for other volumes.
func (r *podRunner) volumeFiles(ctx context.Context, v corev1.Volume, from sources) (map[string]volumeFile, error) {
	ns := r.currentPod().Namespace
	switch {
	case v.ConfigMap != nil:
		return configMapFiles(from, ns, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, defaultMode(v.ConfigMap.DefaultMode, 0o644))
	case v.Secret != nil:
		return secretFiles(from, ns, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, defaultMode(v.Secret.DefaultMode, 0o644))
	case v.DownwardAPI != nil:
		return r.downwardFiles(v.DownwardAPI.Items, defaultMode(v.DownwardAPI.DefaultMode, 0o644))
	case v.Projected != nil:
		mode := defaultMode(v.Projected.DefaultMode, 0o644)
		all := map[string]volumeFile{}
		for _, src := range v.Projected.Sources {
			var files map[string]volumeFile
			var err error
			switch {
			case src.ConfigMap != nil:
				files, err = configMapFiles(from, ns, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, mode)
			case src.Secret != nil:
				files, err = secretFiles(from, ns, src.Secret.Name, src.Secret.Items, src.Secret.Optional, mode)
			case src.DownwardAPI != nil:
				files, err = r.downwardFiles(src.DownwardAPI.Items, mode)
			case src.ServiceAccountToken != nil:
				files, err = r.tokenFile(ctx, v.Name, src.ServiceAccountToken, mode)
			}
			if err != nil {
				return nil, err
			}
			for k, f := range files {
				all[k] = f
			}
		}
		return all, nil
	}
	return nil, nil
}

func configMapFiles(from sources, ns, name string, items []corev1.KeyToPath, optional *bool, mode os.FileMode) (map[string]volumeFile, error) {
	cm, err := from.configMap(ns, name)
	if err != nil {
		if isOptional(optional) {
			return map[string]volumeFile{}, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, mode)
}

func secretFiles(from sources, ns, name string, items []corev1.KeyToPath, optional *bool, mode os.FileMode) (map[string]volumeFile, error) {
	s, err := from.secret(ns, name)
	if err != nil {
		if isOptional(optional) {
			return map[string]volumeFile{}, nil
		}
		return nil, err
	}
	return keyFiles(s.Data, items, mode)
}

func keyFiles(data map[string][]byte, items []corev1.KeyToPath, mode os.FileMode) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = volumeFile{data: v, mode: mode}
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("no key %q", it.Key)
		}
		files[it.Path] = volumeFile{data: v, mode: defaultMode(it.Mode, int32(mode))}
	}
	return files, nil
}

func (r *podRunner) downwardFiles(items []corev1.DownwardAPIVolumeFile, mode os.FileMode) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podField(r.currentPod(), it.FieldRef.FieldPath, r.ip.String(), r.node.ip.String())
		case it.ResourceFieldRef != nil:
			for i := range r.currentPod().Spec.Containers {
				if r.currentPod().Spec.Containers[i].Name == it.ResourceFieldRef.ContainerName {
					v = resourceField(&r.currentPod().Spec.Containers[i], it.ResourceFieldRef)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		files[it.Path] = volumeFile{data: []byte(v), mode: defaultMode(it.Mode, int32(mode))}
	}
	return files, nil
}

// tokenFile asks the API server for a token bound to this Pod (TokenRequest), and renews it
// once 80% of its lifetime has passed, as kubelet does.
func (r *podRunner) tokenFile(ctx context.Context, volume string, src *corev1.ServiceAccountTokenProjection, mode os.FileMode) (map[string]volumeFile, error) {
	key := volume + "/" + src.Path
	path := filepath.Join(r.vols.paths[volume], src.Path)
	if renew, ok := r.vols.tokens[key]; ok && time.Now().Before(renew) {
		data, err := os.ReadFile(path)
		if err == nil {
			return map[string]volumeFile{src.Path: {data: data, mode: mode}}, nil
		}
	}
	exp := ptr.Deref(src.ExpirationSeconds, 3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: r.currentPod().Name, UID: r.currentPod().UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := r.currentPod().Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := r.cs.CoreV1().ServiceAccounts(r.currentPod().Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token request for service account %s: %w", sa, err)
	}
	lifetime := time.Until(tr.Status.ExpirationTimestamp.Time)
	r.vols.tokens[key] = time.Now().Add(lifetime * 8 / 10)
	return map[string]volumeFile{src.Path: {data: []byte(tr.Status.Token), mode: mode}}, nil
}

// writeAtomic lays files out as kubelet's atomic writer does: a timestamped directory, a
// ..data symlink to it, and one symlink per top-level entry, so readers never see a half
// update. It does nothing when the content is unchanged.
func writeAtomic(dir string, files map[string]volumeFile) error {
	if sameContent(dir, files) {
		return nil
	}
	ts := filepath.Join(dir, ".."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.MkdirAll(ts, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name, f := range files {
		p := filepath.Join(ts, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
		names = append(names, name)
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	if err := os.Rename(tmpLink, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	sort.Strings(names)
	top := map[string]bool{}
	for _, name := range names {
		first := name
		if i := bytes.IndexByte([]byte(name), '/'); i >= 0 {
			first = name[:i]
		}
		top[first] = true
		link := filepath.Join(dir, first)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join("..data", first) {
			continue
		}
		_ = os.RemoveAll(link)
		if err := os.Symlink(filepath.Join("..data", first), link); err != nil {
			return err
		}
	}
	// Only the paths this writer made (symlinks into ..data) that the payload no longer has
	// go, as kubelet's atomic writer does. Anything else is not ours: the directory a volume
	// nested in this one is mounted on (/etc/valkey/tls inside /etc/valkey) is an empty
	// directory here, and removing it detaches that mount in the container's namespace (the
	// files vanished under a running Valkey, found when a CONFIG SET of a tls- setting made
	// it read its certificate again).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if target, err := os.Readlink(p); err == nil && e.Name()[0] != '.' && !top[e.Name()] && strings.HasPrefix(target, "..data") {
			_ = os.Remove(p)
		}
	}
	if old != "" && old != filepath.Base(ts) {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

func sameContent(dir string, files map[string]volumeFile) bool {
	cur, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		return false
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(dir, cur), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		return nil
	})
	if err != nil || n != len(files) {
		return false
	}
	for name, f := range files {
		p := filepath.Join(dir, cur, name)
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(data, f.data) {
			return false
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != f.mode.Perm() {
			return false
		}
	}
	return true
}
