// Package restart is `kubectl valkey restart NAME`: it asks the operator for a rolling
// restart by annotating the ValkeyCluster with the time of the request; the operator restarts
// the replicas one at a time and the primary last, after handing its role over.
package restart
