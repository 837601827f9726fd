package localcluster

import (
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultVolumeCapacity is the size of a node's disk the storage class provisions from when
// Options.VolumeCapacity is unset: a common node disk, larger than any volume the samples or
// the project's defaults ask for.
var defaultVolumeCapacity = resource.MustParse("100Gi")

// Options configure a local cluster. The zero value is a useful default.
type Options struct {
	// Nodes is how many Nodes the agent registers (default 3), spread over Zones.
	Nodes int
	// Zones are the topology.kubernetes.io/zone labels given to Nodes in turn (default a, b, c).
	Zones []string
	// NewIPOnRecreate gives a Pod that is deleted and re-created under the same name a new
	// loopback IP, as real clusters do. Off, a re-created Pod keeps the IP of its name.
	// Cluster.SetNewIPOnRecreate changes it while the cluster runs.
	NewIPOnRecreate bool
	// RestartBackoff is the first delay before restarting a crashed container; it doubles up
	// to MaxRestartBackoff. The defaults are kubelet's, 10 s and 5 min (supervise.go says
	// when a restart waits: a first crash, or one after 10 minutes of running, does not).
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// MaxPodsPerNode is the Pods each Node takes (kubelet's --max-pods), default 110 as
	// kubelet's: 1000 single-pod clusters on 3 Nodes need more.
	MaxPodsPerNode int
	// ExecProbeMinPeriod, when set, stretches every exec probe's period to at least this
	// long. Kubelet has no such knob: it is for benchmarks of many pods on a small machine,
	// where each exec probe is a few process starts (1000 pods probed every 2 s would be
	// 1500 a second on 2 cores) and the probes, not the code measured, would set the pace.
	ExecProbeMinPeriod time.Duration
	// Images maps image repositories (without tag or digest) to local programs. The Valkey
	// image and the operator image are mapped by default; see DefaultImages.
	Images map[string]Image
	// OperatorLayout is an OCI image layout holding the operator's image, as make image
	// writes it (BuildOperatorImage): the image it names (repository and tag, the chart's
	// default) runs from it; another tag of the repository has no mapping.
	OperatorLayout string
	// AfterTests runs once RunTests's tests have run, before the cluster stops: checks over
	// the whole run (the audit log's, say). Its error fails the run.
	AfterTests func(*Cluster) error
	// VolumeCapacity is the largest volume the storage class provisions (default 100Gi), as
	// a node's disk bounds a local volume: a larger claim stays Pending with a
	// ProvisioningFailed event. It is not this machine's free space, which other work shares
	// and changes: the volumes are directories that take only what is written to them, so
	// a test's 10Gi claim must not depend on how full the machine's disk is.
	VolumeCapacity *resource.Quantity
	// Log receives the control plane's and the pods' output (default: discarded). Pod output
	// is also kept per container under the cluster's directory.
	Log io.Writer
}

// Image says how a container image maps to programs on this machine.
type Image struct {
	// Entrypoint is used when a container has no command.
	Entrypoint []string
	// Cmd follows Entrypoint when the container has neither command nor args, as an image
	// config's Cmd does.
	Cmd []string
	// Programs maps a command name used by the image (e.g. "/manager") to a local path.
	Programs map[string]string
	// RootFS, when set, is the image's unpacked file system (LoadOCILayout): the container sees
	// its files at their paths, over the host's, so that its entrypoint is the image's own
	// binary and not a program of this machine.
	RootFS string
	// User is the image config's user ("65532:65532", numeric), which the container runs as
	// when its securityContext names none.
	User string
	// WorkingDir is the image config's, used when the container sets none.
	WorkingDir string
	// Err says why the image cannot run here (its programs could not be had): a container
	// with it fails to start with this error.
	Err error
}

func (o Options) withDefaults() (Options, error) {
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if len(o.Zones) == 0 {
		o.Zones = []string{"a", "b", "c"}
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = kubeletBackOff
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = kubeletMaxBackOff
	}
	images, err := DefaultImages(o.OperatorLayout)
	if err != nil {
		return o, err
	}
	for k, v := range o.Images {
		images[k] = v
	}
	o.Images = images
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.VolumeCapacity == nil {
		o.VolumeCapacity = &defaultVolumeCapacity
	}
	return o, nil
}

// DefaultImages maps the Valkey images to Valkey binaries by version (valkeyImages), the S3
// server's image to versitygw (s3Image), Prometheus's to the Prometheus server
// (prometheusImage) and the operator's image to the OCI layout given
// (LoadOCILayout), when one is: a layout that cannot be read is an error, since the repository
// it would map is the one it names.
func DefaultImages(operatorLayout string) (map[string]Image, error) {
	m := map[string]Image{
		"busybox":                   {Entrypoint: []string{"sh"}},
		"docker.io/library/busybox": {Entrypoint: []string{"sh"}},
	}
	if err := valkeyImages(m); err != nil {
		for _, repo := range valkeyRepositories {
			for _, tag := range []string{"9.1", "9.1.2"} {
				m[repo+":"+tag] = Image{Err: err}
			}
		}
	}
	s3Image(m)
	prometheusImage(m)
	if operatorLayout != "" {
		img, err := LoadOCILayout(operatorLayout)
		if err != nil {
			return nil, err
		}
		m[img.Name] = img.Image
	}
	return m, nil
}
