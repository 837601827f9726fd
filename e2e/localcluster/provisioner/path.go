package provisioner

import corev1 "k8s.io/api/core/v1"

// PathOf returns the directory on this machine that backs a PV: the path of a hostPath PV
// (what this package provisions) or of a local PV (what someone may create by hand). The
// node agent mounts it where a Pod wants the claim. ok is false for any other kind of PV.
func PathOf(pv *corev1.PersistentVolume) (path string, ok bool) {
	switch {
	case pv == nil:
		return "", false
	case pv.Spec.HostPath != nil && pv.Spec.HostPath.Path != "":
		return pv.Spec.HostPath.Path, true
	case pv.Spec.Local != nil && pv.Spec.Local.Path != "":
		return pv.Spec.Local.Path, true
	}
	return "", false
}
