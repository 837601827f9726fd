// Package admission is the operator's opt-in admission webhooks for the valkey.fsm.dev kinds,
// built on the hub version (v1beta1) only: the API server converts a v1alpha1 request before
// it calls them (matchPolicy Equivalent) and converts the answer back.
//
//   - The mutating webhook writes v1beta1.SetDefaults into a ValkeyCluster once, at admission,
//     so that what is stored (and what kubectl get shows, and the scale subresource reads) is
//     what runs, replicas by topology and the volume's size by profile included.
//   - The validating webhooks check what the CRDs' CEL rules cannot, because it lies outside
//     the object: that the requesting user may read every Secret the spec names (else the
//     operator would read it for them), that those Secrets exist and hold the keys the
//     operator will read, that a ValkeyACL's or ValkeyBackup's cluster exists, and that a
//     restore names a Completed backup. Advice that must not refuse comes back as warnings.
//
// The operator serves the handlers on every replica, beside the conversion webhook and with
// its certificate (operator/manager); the chart's webhook configurations (webhooks.enabled)
// decide whether the API server calls them.
package admission
