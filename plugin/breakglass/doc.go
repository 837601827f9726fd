// Package breakglass holds the verbs for the two decisions the operator leaves to a person
// because each gives up data: force-bootstrap (the annotation valkey.fsm.dev/bootstrap-from:
// start a shard from one pod's data, discarding the others') and force-failover (the
// annotation valkey.fsm.dev/failover-without: fail over without pods that may hold
// acknowledged writes). Each shows what the operator will do and what is lost, from the
// cluster's status, then asks for the cluster's name to be typed (or --yes) before writing the
// annotation; the operator does the rest and records it in history.
package breakglass
