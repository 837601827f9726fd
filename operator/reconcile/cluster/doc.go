// Package cluster is the operator's loop for one ValkeyCluster: observe (Kubernetes objects
// and a survey of every Valkey node) -> machine.Decide -> persist the transition first
// (status, Event, journal, metrics) -> act through the actuators (actuators.go, one per action
// kind). An operator restart between any two steps is harmless: the next reconcile rebuilds
// the machine from status.
//
// Everything a cluster's turn carries out is here: the actuators, password rotation, TLS,
// restore (the machine's Restoring operation) and the final backup a deletion waits for. The
// ValkeyACL users each turn applies are package users'. The backups (ValkeyBackup and the
// schedule) are their own controllers in package backups, which reads this one's last look at
// a cluster through a narrow interface (Reconciler.LastLook, Reconciler.Pool). What this
// package remembers per cluster is listed in one place (Reconciler.memories), which a deleted
// cluster is forgotten from.
package cluster
