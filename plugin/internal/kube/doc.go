// Package kube is kubectl-valkey's access to the Kubernetes API: kubectl's connection flags,
// the clients built from them, and reading a ValkeyCluster.
//
// ValkeyClusters are read with the dynamic client and converted from unstructured into the
// typed struct, not through a registered scheme: the plugin then works against whatever the
// server returns (a newer operator's extra status fields are kept in the unstructured object
// for -o json and yaml) and does not depend on scheme registration.
package kube
