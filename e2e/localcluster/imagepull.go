package localcluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// relistDelay is how soon after a failed pull kubelet syncs the Pod again and finds the pull in
// back-off: its runtime relist (PLEG) runs every second. Until then the container shows
// ErrImagePull, afterwards ImagePullBackOff until the next pull.
const relistDelay = time.Second

// ensureImage has c's image before each start, as kubelet's image manager does: a pull that
// fails leaves the container waiting (ErrImagePull with the error, then ImagePullBackOff)
// and is tried again with kubelet's back-off (10 s, doubling up to 5 minutes). It returns
// false when the Pod ends meanwhile.
func (r *podRunner) ensureImage(c *container) bool {
	image := c.spec.Image
	b := &restartBackoff{initial: kubeletBackOff, max: kubeletMaxBackOff}
	var failedAt time.Time
	for {
		if !r.node.waitRunning(r.ctx) || r.deleting() {
			return false
		}
		reason, msg := pullImage(r.cluster.opts.Images, image)
		switch reason {
		case "":
			return true
		case "InvalidImageName":
			r.setWaiting(c, reason, msg)
			r.event(corev1.EventTypeWarning, "InspectFailed", msg)
			r.event(corev1.EventTypeWarning, "Failed", "Error: InvalidImageName")
			if !r.pause(kubeletSyncBackOff) {
				return false
			}
			continue
		}
		r.event(corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", image))
		r.event(corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %s", image, msg))
		r.event(corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		r.setWaiting(c, reason, msg)
		failedAt = time.Now()
		b.restarted(failedAt, failedAt)
		if !r.pause(relistDelay) {
			return false
		}
		r.setWaiting(c, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q", image))
		r.event(corev1.EventTypeNormal, "BackOff", fmt.Sprintf("Back-off pulling image %q", image))
		r.event(corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
		if !r.pause(time.Until(failedAt.Add(b.delay))) {
			return false
		}
	}
}

// The local cluster has no registry: an image "pulls" when a real registry could serve it.
// pullImage is the rule, the same for every node:
//
//   - a reference that does not parse fails as kubelet's does (InvalidImageName);
//   - an image the cluster maps (Options.Images, DefaultImages) is present;
//   - a registry whose host cannot exist (the names RFC 2606 and RFC 6761 reserve: .invalid,
//     .example, .test, .localhost, example.com, example.net, example.org) fails to resolve;
//   - a registry on this machine's loopback (localhost:1, 127.0.0.1:5000) is dialled, and one
//     nobody listens on refuses the connection;
//   - a repository the cluster maps some tags of, and not this one (the operator's image, of
//     which the OCI layout holds one tag), has no such manifest;
//   - anything else is taken to exist (a public image the container gives a command for):
//     what a real registry says of it cannot be known here without the network.
//
// It returns the waiting reason kubelet gives a container whose image it cannot have ("" when
// the image is there) and the message, worded as containerd's error that kubelet passes on.
func pullImage(images map[string]Image, image string) (reason, message string) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "InvalidImageName", fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image reference %q: invalid reference format", image, image)
	}
	if _, ok := lookupImage(images, image); ok {
		return "", ""
	}
	registry := ref.Context().RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "registry-1.docker.io" // what containerd dials for Docker Hub
	}
	manifest := fmt.Sprintf("https://%s/v2/%s/manifests/%s", registry, ref.Context().RepositoryStr(), ref.Identifier())
	// As the CRI's gRPC error reaches kubelet: containerd's words behind the status code.
	failed := func(code, err string) (string, string) {
		return "ErrImagePull", fmt.Sprintf("rpc error: code = %s desc = failed to pull and unpack image %q: failed to resolve reference %q: %s", code, ref.Name(), ref.Name(), err)
	}
	host, port, splitErr := net.SplitHostPort(registry)
	if splitErr != nil {
		host, port = registry, "443"
	}
	if reservedHost(host) {
		return failed("Unknown", fmt.Sprintf("failed to do request: Head %q: dial tcp: lookup %s: no such host", manifest, host))
	}
	if loopbackHost(host) {
		addr := net.JoinHostPort(host, port)
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Err != nil {
				err = op.Err
			}
			return failed("Unknown", fmt.Sprintf("failed to do request: Head %q: dial tcp %s: %v", manifest, addr, err))
		}
		_ = conn.Close()
		return "", ""
	}
	if knownRepository(images, ref.Context().Name(), image) {
		return failed("NotFound", fmt.Sprintf("%s: not found", ref.Name()))
	}
	return "", ""
}

// reservedHost tells whether a host name is one no registry can have: a top-level domain
// reserved by RFC 2606 and RFC 6761, or one of the example second-level domains.
func reservedHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	for _, tld := range []string{"invalid", "example", "test", "localhost"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return tld != "localhost" || h != "localhost" // plain localhost is this machine
		}
	}
	for _, sld := range []string{"example.com", "example.net", "example.org"} {
		if h == sld || strings.HasSuffix(h, "."+sld) {
			return true
		}
	}
	return false
}

// loopbackHost tells whether a registry host is this machine: localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// knownRepository tells whether the cluster maps some tag of repository (as written in the
// image, or fully qualified) but none for the repository as a whole.
func knownRepository(images map[string]Image, qualified, image string) bool {
	repos := map[string]bool{imageRepository(image): true, qualified: true}
	for k := range images {
		if repos[k] {
			return false // every tag of it runs
		}
	}
	for k := range images {
		if repos[imageRepository(k)] {
			return true
		}
	}
	return false
}
