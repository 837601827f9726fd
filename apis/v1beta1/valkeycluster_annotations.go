package v1beta1

// Annotations on a ValkeyCluster through which users (and `kubectl valkey`) ask the operator
// for an operation. They carry intent only: the operator does the work, records it in
// history and removes or keeps the annotation as described.
const (
	// AnnotationSwitchoverTo asks for a planned, zero-loss switchover of the primary role to
	// the named pod (a caught-up replica), or to the most caught-up replica when the value is
	// "auto" (the operator then rewrites it to the pod it chose). The operator removes the
	// annotation once the pod is the primary, or when the request cannot be carried out
	// (an Event says why).
	AnnotationSwitchoverTo = "valkey.fsm.dev/switchover-to"
	// AnnotationRestartRequested asks for a rolling restart: any new value (kubectl valkey
	// restart writes the time) becomes part of the pod template, so every pod is restarted
	// the safe way (replicas one at a time, the primary last after a hand-over).
	AnnotationRestartRequested = "valkey.fsm.dev/restart-requested"
	// AnnotationBootstrapFrom names the pod whose data a bootstrap starts from, when the
	// operator cannot choose safely on its own: the nodes of a cluster applied again on kept
	// claims hold forked data, or a pod whose claim is older than the cluster never answers.
	// Every other node's data is discarded (they full-sync from it); the history records the
	// choice and what was discarded. It is read only while the cluster bootstraps.
	AnnotationBootstrapFrom = "valkey.fsm.dev/bootstrap-from"
	// AnnotationFailoverWithout names pods (comma-separated) a failover may go on without:
	// when the primary is lost together with replicas (a node that held both), the replicas
	// left may lack writes acknowledged with WAIT that only the lost ones have, and the
	// failover waits for them. Naming them is the user's decision that those writes are given
	// up; the history records it. The operator removes the annotation when the failover
	// completes, or when every pod it names answers again.
	AnnotationFailoverWithout = "valkey.fsm.dev/failover-without"
	// AnnotationRotatePasswords asks for a password rotation without a restart: the value
	// names the users (comma-separated: default, operator, replication, or all), optionally
	// followed by @ and anything that makes the request unique (kubectl valkey rotate writes
	// the time); each value is carried out once. The operator removes the annotation once the
	// rotation is recorded in status.machine.rotation, or when it refuses it (an Event says
	// why).
	AnnotationRotatePasswords = "valkey.fsm.dev/rotate-passwords"
	// AnnotationRetireOldPasswords ends the grace period of the rotation in progress at once:
	// the user's word that every client uses the new password. Removed when no rotation is in
	// progress.
	AnnotationRetireOldPasswords = "valkey.fsm.dev/retire-old-passwords"
	// SwitchoverAuto lets the operator choose the target of a switchover.
	SwitchoverAuto = "auto"
)
