// Package kube builds the Kubernetes objects a ValkeyCluster owns (Secret, ConfigMap,
// Services, StatefulSet, PodDisruptionBudget) and applies them: created when missing,
// repaired when they drifted from what they should be, left alone otherwise, so that a
// cluster where nothing changes costs no API writes.
package kube
