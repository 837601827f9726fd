// Package version is `kubectl valkey version`: the plugin's own version and commit, and the
// image the cluster's operator runs, so that a bug report names both sides. The cluster part is
// best effort: a plugin without a cluster, or without the right to list workloads in every
// namespace, still prints its own version and says why it could not tell the operator's.
package version
