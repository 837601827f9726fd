// Package storageversion moves the stored objects of the operator's kinds (ValkeyCluster,
// ValkeyBackup, ValkeyACL) to their CRD's storage version and then clears the older versions
// from the CRD's status.storedVersions.
//
// Changing a CRD's storage version converts nothing in etcd: an object stays encoded in the
// version it was last written in until something writes it again, and every version ever
// used for storage stays in status.storedVersions, which keeps the API server from ever
// dropping it from spec.versions. After an upgrade from a chart whose CRDs stored v1alpha1,
// the leader rewrites every object once (an unchanged update, as
// kube-storage-version-migrator does: the API server re-encodes the object in the storage
// version, and writes nothing when it already is) and then sets storedVersions to the storage
// version alone.
package storageversion
