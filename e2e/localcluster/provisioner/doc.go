// Package provisioner provisions PersistentVolumes as directories: the storage of the local
// cluster.
//
// It plays the part of an external provisioner (and resizer) beside the real
// kube-controller-manager. The division of work is Kubernetes's own:
//
//   - kube-controller-manager's persistentvolume-binder sees a claim of a class whose
//     provisioner is external, annotates it with volume.kubernetes.io/storage-provisioner and
//     waits; this package creates the directory Root/<pv-name> and a hostPath PV whose
//     claimRef already names the claim; the binder then binds the two.
//   - When the claim is deleted, the binder marks the PV Released and, seeing the
//     pv.kubernetes.io/provisioned-by annotation of an external provisioner, leaves deletion
//     to it; this package removes the directory and deletes the PV.
//   - When a bound claim asks for more storage than its status shows, this package raises
//     the PV's capacity and then the claim's status capacity, as the external resizer does
//     after a successful expansion. A directory has no size to grow.
//
// The binder alone is not enough: the API server adds the kubernetes.io/pvc-protection and
// kubernetes.io/pv-protection finalizers, so the controller-manager must also run the
// pvc-protection and pv-protection controllers, or deleted claims and volumes never go away.
//
// A claim larger than the storage (Options.Capacity, else the free space of Root's file system)
// is not provisioned: it stays Pending with the ProvisioningFailed event an external
// provisioner records, and is tried again with its back-off (1 s doubling to 5 minutes).
// Growing a claim past the free space fails the same way (VolumeResizeFailed).
//
// Claims with a selector, a data source or volumeMode Block are not provisioned (logged and
// left Pending), as with most external provisioners.
package provisioner
