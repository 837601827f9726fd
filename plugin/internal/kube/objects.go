package kube

import "github.com/valkey-fsm/valkey-operator/apis/v1beta1"

// What the operator names and labels on the objects a ValkeyCluster owns, as the verbs that
// reach the pods need it. They mirror actuators/kube and actuators/valkey rather than import
// them: those packages bring controller-runtime and valkey-go, and the plugin depends on the
// API and the machine only. TestObjectsMirrorTheOperator keeps them equal.
const (
	// LabelCluster is on every pod, StatefulSet and claim of the cluster.
	LabelCluster = "valkey.fsm.dev/cluster"
	// AnnotationTLS on a pod says how it accepts connections: absent (plain only), "Both" or
	// "TLSOnly".
	AnnotationTLS = "valkey.fsm.dev/tls"
	// Container is the Valkey server's container in every pod.
	Container = "valkey"

	// KeyClientPassword and KeyOperatorPassword are the auth Secret's keys of the application
	// user's (default) and the operator user's current passwords.
	KeyClientPassword   = "password"
	KeyOperatorPassword = "operator-password"
	UserClient          = "default"
	UserOperator        = "operator"

	// Port and TLSPort are what a node listens on, bound to its pod IP only.
	Port    = 6379
	TLSPort = v1beta1.TLSPort
	// TLSDir is where the pod mounts its certificate, key and CA (tls.crt, tls.key, ca.crt).
	TLSDir = "/etc/valkey/tls"
)

// AuthSecret is the name of the cluster's auth Secret (the operator creates it).
func AuthSecret(cluster string) string { return cluster + "-auth" }

// RotationSecret is the name of a password rotation's own Secret (new and previous
// passwords), present while a rotation runs.
func RotationSecret(cluster string) string { return cluster + "-rotation" }

// ClusterSelector selects every pod, StatefulSet and claim of a cluster.
func ClusterSelector(cluster string) string { return LabelCluster + "=" + cluster }
