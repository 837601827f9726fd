package localcluster_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
)

// layoutProbeImage is an image the suite's cluster runs from an OCI layout (as it runs the
// operator's): its entrypoint is a script of the image's, which reports who and where it runs.
const layoutProbeImage = "registry.test/layout-probe"

// layoutProbeScript is at /probe/report in the image only; /probe/note too, read through the
// container's root. The host's shell and id stay visible under the image's files.
const layoutProbeScript = `#!/bin/sh
if [ "$1" = --write ]; then echo changed > /probe/note; fi
echo "uid=$(id -u) gid=$(id -g) pwd=$(pwd) args=$* note=$(cat /probe/note)"
`

// writeLayoutProbe writes the probe's OCI layout into dir and loads it, for Options.Images.
func writeLayoutProbe(dir string) (*localcluster.LayoutImage, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name, body string
		mode       int64
	}{{"probe/report", layoutProbeScript, 0o755}, {"probe/note", "from-the-image", 0o644}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: []string{"/probe/report"}, Cmd: []string{"--from-cmd"}, User: "65532:65533", WorkingDir: "/probe"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	p := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	lp, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		return nil, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"io.containerd.image.name": layoutProbeImage + ":1"})); err != nil {
		return nil, err
	}
	return localcluster.LoadOCILayout(filepath.Join(dir, "oci"))
}

// layoutProbe is the probe's image as loaded, to look at its unpacked files, or why not.
var (
	layoutProbe    *localcluster.LayoutImage
	layoutProbeErr error
)

// layoutProbeImages maps the probe for the suite's cluster; a failure maps the probe to its
// error, which the test then reports.
func layoutProbeImages() map[string]localcluster.Image {
	dir, err := os.MkdirTemp("", "layout-probe-")
	if err != nil {
		layoutProbeErr = err
		return map[string]localcluster.Image{layoutProbeImage: {Err: err}}
	}
	img, err := writeLayoutProbe(dir)
	_ = os.RemoveAll(dir) // the unpacked root is in the image cache, keyed by digest
	if err != nil {
		layoutProbeErr = err
		return map[string]localcluster.Image{layoutProbeImage: {Err: err}}
	}
	layoutProbe = img
	return map[string]localcluster.Image{img.Name: img.Image}
}

// TestAContainerRunsFromAnOCILayout: an image from an OCI layout runs its own entrypoint (a
// file only the image has), with its Cmd unless the container gives args, as its config's
// user and group unless the pod names a user, in its config's working directory. What it
// writes over the image's files stays in the container: the unpacked image is shared.
func TestAContainerRunsFromAnOCILayout(t *testing.T) {
	ns := cl.Namespace(t)
	if layoutProbe == nil {
		t.Fatalf("the probe's layout could not be made: %v", layoutProbeErr)
	}
	ctx := ctxFor(t, 2*time.Minute)
	cs := cl.Clientset()
	for _, c := range []struct {
		name string
		args []string
		sec  *corev1.PodSecurityContext
		want string
	}{
		{"as-the-image-says", nil, nil, "uid=65532 gid=65533 pwd=/probe args=--from-cmd note=from-the-image"},
		{"with-args", []string{"--given"}, nil, "uid=65532 gid=65533 pwd=/probe args=--given note=from-the-image"},
		{"as-the-pod-says", nil, &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(1001)), RunAsGroup: ptr.To(int64(1002))}, "uid=1001 gid=1002 pwd=/probe args=--from-cmd note=from-the-image"},
		{"writing-as-root", []string{"--write"}, &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(0))}, "uid=0 gid=0 pwd=/probe args=--write note=changed"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy:   corev1.RestartPolicyNever,
				SecurityContext: c.sec,
				Containers:      []corev1.Container{{Name: "probe", Image: layoutProbeImage + ":1", Args: c.args}},
			},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var last *corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, c.name, metav1.GetOptions{})
			last = p
			return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), nil
		})
		if err != nil || last.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("%s did not succeed: %v %s", c.name, err, podSummary(last))
		}
		out, err := cs.CoreV1().Pods(ns).GetLogs(c.name, &corev1.PodLogOptions{Container: "probe"}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s printed %q, want %q", c.name, got, c.want)
		}
	}
	if note, err := os.ReadFile(layoutProbe.Path("/probe/note")); err != nil || string(note) != "from-the-image" {
		t.Errorf("a container's write reached the unpacked image: %q %v", note, err)
	}
}
