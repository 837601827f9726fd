package v1beta1

import "strings"

// SentinelRefusal is the message of the first rule of this version's CEL that refuses s on its
// own (without the spec before it) because it is a Sentinel topology's, "" when none does: the
// same words as the rules on ValkeyClusterSpec. A v1alpha1 client writes such a spec past them:
// v1alpha1 shows this topology as Replication, and the API server checks a write against the
// rules of the version it is written in, so the conversion to v1beta1 refuses it with these
// words instead. Of the rules that compare with the spec before, auth.enabled's is checked
// there too (SentinelAuthRefusal, with the setting the object was read with); sentinel.storage,
// which v1alpha1 shows only inside its annotation, is not.
func SentinelRefusal(s *ValkeyClusterSpec) string {
	if s.Topology != TopologySentinel {
		return ""
	}
	for k := range s.Config {
		if l := strings.ToLower(k); l == "replica-priority" || l == "slave-priority" {
			return "config sets replica-priority, which the operator owns in the Sentinel topology (0 on a node it has not opened as a sync source, so that no sentinel promotes a node that may lack data): remove it"
		}
	}
	if s.Replicas != nil && *s.Replicas < 1 {
		return "a Sentinel topology needs at least one replica: the sentinels fail the primary over to a replica, and with none they never can; set spec.replicas to 1 or more"
	}
	if s.TLS.Mode != "" && s.TLS.Mode != TLSDisabled {
		return "the Sentinel topology does not run TLS yet: its sentinels reach the data nodes in plain text; remove spec.tls, or use topology Replication for TLS"
	}
	return ""
}

// SentinelAuthRefusal is the message of the CEL rule that keeps spec.auth.enabled of a Sentinel
// topology as it was created (was, now: the setting before and after, defaults applied), ""
// when it did not change.
func SentinelAuthRefusal(was, now bool) string {
	if was == now {
		return ""
	}
	return "auth.enabled cannot change in the Sentinel topology yet: each sentinel keeps the users it started with in its own file; create a new cluster with the setting it needs"
}
