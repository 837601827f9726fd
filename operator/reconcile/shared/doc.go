// Package shared holds what the operator's controllers (package cluster, package backups)
// share, and nothing that is one controller's own: the Prometheus metrics, the Event recorder
// that bounds notes to what the API server accepts, the backup stores (backups write to
// them, restores read from them), and the last look a cluster's turn took, which the cluster
// controller keeps and the backups read.
package shared
