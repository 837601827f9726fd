// Package hibernate is `kubectl valkey hibernate NAME` and `kubectl valkey wake NAME`: they
// set spec.hibernate of a ValkeyCluster (the operator closes writes, lets the replicas catch
// up and stops every pod, keeping the claims), and clear it (the pods start on their claims
// and the cluster bootstraps on the data it kept).
package hibernate
