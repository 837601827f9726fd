package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyACLSpec is one Valkey user of a cluster: its name, its rules and its passwords.
type ValkeyACLSpec struct {
	// Cluster is the ValkeyCluster in this namespace whose nodes get the user.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="cluster is immutable: create another ValkeyACL"
	Cluster string `json:"cluster"`

	// User is the Valkey user name. The operator's own users (operator, replication,
	// default: the application user of spec.auth, restore, probe: the readiness probe's)
	// cannot be taken.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['operator', 'replication', 'default', 'restore', 'probe'])",message="operator, replication, default, restore and probe are the operator's own users: choose another name"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="user is immutable: create another ValkeyACL (and delete this one)"
	User string `json:"user"`

	// Rules are the user's permissions in Valkey's ACL grammar (ACL SETUSER), one rule per
	// item: key patterns (~app:*, %R~cache:*), channels (&events:*), commands and categories
	// (+@read, +get, -@dangerous), selectors. The user starts from nothing (reset), then gets
	// these. Valkey itself checks them before any node is changed; a rule it refuses is
	// reported in status and an Event.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	Rules []ACLRule `json:"rules"`

	// Enabled switches the user on (default) or off; an off user cannot authenticate.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// PasswordSecretRefs are the user's passwords, each a key of a Secret in this namespace
	// (key password unless set). Two are accepted together while applications move from one
	// to the other.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +listType=atomic
	PasswordSecretRefs []SecretKeyRef `json:"passwordSecretRefs"`

	// AllowAdmin lets the rules grant administrative commands: every command and subcommand
	// the node puts in @admin or @dangerous and in no data category (@keyspace, @read,
	// @write), INFO excepted, as the node's own command table says (ACL, CONFIG GET and SET,
	// REPLICAOF and SLAVEOF, FAILOVER, PSYNC, SYNC, SHUTDOWN, DEBUG, MODULE, MONITOR, SAVE,
	// CLIENT KILL and PAUSE, CLUSTER MEET, SETSLOT, FORGET and the other changes, among
	// others), however the rules name them: a category, a command, an alias, one subcommand,
	// a first argument or a selector. With them, the user could lock the operator out, split
	// the cluster's writes or read every key past its key patterns: docs/security.md. Without
	// it, such rules are refused. Data commands (KEYS, FLUSHALL, SORT, RESTORE ...) need no
	// AllowAdmin.
	// +optional
	AllowAdmin bool `json:"allowAdmin,omitempty"`
}

// ACLRule is one rule of Valkey's ACL grammar. Switching the user on or off and its passwords
// are the ValkeyACL's own fields, and a rule is one word: the users' file the pods start from
// holds the rules, and a space or line break would let a rule say more than itself; a quote
// would open a quoted word there, and the file would no longer be readable.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:Pattern=`^\S+$`
// +kubebuilder:validation:XValidation:rule="!self.contains('\"') && !self.contains(\"'\")",message="a rule must not hold a quote (\" or '): the users' file the pods start from reads a quote as the start of a quoted word, and a node would not start again"
// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['on', 'off', 'nopass', 'resetpass', 'reset']) && !self.startsWith('>') && !self.startsWith('<') && !self.startsWith('#') && !self.startsWith('!')",message="a rule must not switch the user on or off or set passwords (on, off, nopass, resetpass, reset, >, <, #, !): use spec.enabled and spec.passwordSecretRefs"
type ACLRule string

// ValkeyACLStatus is what the operator did with the user; written by the operator only.
type ValkeyACLStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is Applied (every answering node has this generation), Pending (some do not
	// yet, or the cluster is not found) or Refused (reason says why; nodes keep what they
	// had).
	// +optional
	// +kubebuilder:validation:Enum=Applied;Pending;Refused
	Phase string `json:"phase,omitempty"`

	// Reason says why the user is Pending or Refused.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Applied is how many of the cluster's answering nodes have this generation, as
	// "applied/nodes".
	// +optional
	Applied string `json:"applied,omitempty"`

	// Conditions are Ready (True once every answering node has this generation: the phase
	// Applied; its reason is the phase otherwise, with the reason as its message), for
	// kubectl wait --for=condition=Ready and tools that read conditions.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ConditionACLReady is a ValkeyACL's Ready condition type.
const ConditionACLReady = "Ready"

// ValkeyACL is a Valkey user of a ValkeyCluster, applied by the operator to every node
// (ACL SETUSER), to nodes that restart and to new ones (the users' file the pods start from
// holds it). Deleting it deletes the user from every node.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vacl,categories=valkey,scope=Namespaced
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="User",type=string,JSONPath=`.spec.user`
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Applied",type=string,JSONPath=`.status.applied`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyACL struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ValkeyACLSpec `json:"spec"`

	// +optional
	Status ValkeyACLStatus `json:"status,omitempty"`
}

// ValkeyACLList is a list of ValkeyACLs.
//
// +kubebuilder:object:root=true
type ValkeyACLList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ValkeyACL `json:"items"`
}
