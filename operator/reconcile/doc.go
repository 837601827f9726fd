// Package reconcile is the operator's loop for one ValkeyCluster: observe (Kubernetes
// objects and a survey of every Valkey node) -> machine.Decide -> persist the transition
// first (status, Event, journal, metrics) -> act through the actuators. An operator restart
// between any two steps is harmless: the next reconcile rebuilds the machine from status.
package reconcile
