package admission

import (
	"fmt"
	"slices"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// secretUse is one Secret a spec names and the keys the operator will read from it.
type secretUse struct {
	// field is where the spec names it (spec.auth.passwordSecretRef), for the messages.
	field string
	name  string
	keys  []string
	// fix says what to do when a key is missing, after "add it, or".
	fix string
}

// TLS and store credentials Secrets have fixed keys (v1beta1.SecretRef has no key).
var (
	tlsKeys   = []string{"tls.crt", "tls.key", "ca.crt"}
	storeKeys = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
)

// clusterSecretUses are the Secrets a ValkeyCluster's spec names. Image pull Secrets are not
// among them: the kubelet reads those for the pods, never the operator, and a user who may
// create pods may name them without reading them.
func clusterSecretUses(spec *v1beta1.ValkeyClusterSpec) []secretUse {
	var uses []secretUse
	if r := spec.Auth.PasswordSecretRef; r != nil {
		uses = append(uses, keyUse("spec.auth.passwordSecretRef", r))
	}
	if r := spec.TLS.SecretRef; r != nil {
		uses = append(uses, secretUse{field: "spec.tls.secretRef", name: r.Name, keys: tlsKeys,
			fix: "name a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt (the CA that signed it), or use spec.tls.issuerRef"})
	}
	if b := spec.Backup; b != nil {
		uses = append(uses, storeUses("spec.backup.store", &b.Store)...)
	}
	if r := spec.RestoreFrom; r != nil && r.Store != nil {
		uses = append(uses, storeUses("spec.restoreFrom.store", r.Store)...)
	}
	return uses
}

// aclSecretUses are the password Secrets a ValkeyACL names.
func aclSecretUses(spec *v1beta1.ValkeyACLSpec) []secretUse {
	var uses []secretUse
	for i := range spec.PasswordSecretRefs {
		uses = append(uses, keyUse(fmt.Sprintf("spec.passwordSecretRefs[%d]", i), &spec.PasswordSecretRefs[i]))
	}
	return uses
}

func keyUse(field string, r *v1beta1.SecretKeyRef) secretUse {
	key := r.Key
	if key == "" {
		key = v1beta1.DefaultSecretKey
	}
	return secretUse{field: field, name: r.Name, keys: []string{key}, fix: "set " + field + ".key to the key that holds the password"}
}

func storeUses(field string, s *v1beta1.BackupStore) []secretUse {
	if s.CredentialsSecretRef == nil {
		return nil
	}
	return []secretUse{{field: field + ".credentialsSecretRef", name: s.CredentialsSecretRef.Name, keys: storeKeys,
		fix: "remove " + field + ".credentialsSecretRef to use the AWS SDK's default credentials (IRSA, Pod Identity, the instance's role)"}}
}

// newUses are the uses that old does not have as they are (same field, Secret and keys).
// An update checks only those: a reference the object already had was checked when it was
// made, possibly by another user, and must not stop who changes something else (scales the
// cluster, say, without the right to read its password); a Secret deleted since is the
// operator's to report in status, not a reason to refuse every later update.
func newUses(uses, old []secretUse) []secretUse {
	var fresh []secretUse
	for _, u := range uses {
		if !slices.ContainsFunc(old, func(o secretUse) bool {
			return o.field == u.field && o.name == u.name && slices.Equal(o.keys, u.keys)
		}) {
			fresh = append(fresh, u)
		}
	}
	return fresh
}
