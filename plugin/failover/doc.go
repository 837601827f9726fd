// Package failover is `kubectl valkey failover NAME [--to POD]`: it asks the operator for a
// planned, zero-loss switchover of the primary role by annotating the ValkeyCluster. The
// operator carries it out (FAILOVER TO: writes pause until the target has caught up) and
// records it in history.
package failover
