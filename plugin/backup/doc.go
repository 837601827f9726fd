// Package backup is `kubectl valkey backup NAME`: it asks the operator for a backup now by
// creating a ValkeyBackup of the cluster, and with --wait follows it until it completes or
// fails for good.
package backup
