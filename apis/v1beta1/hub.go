package v1beta1

// v1beta1 is the hub of the valkey.fsm.dev kinds: every other version converts to and from
// it (controller-runtime's conversion.Hub), and it is the version the API server stores.

// Hub marks ValkeyCluster as the conversion hub.
func (*ValkeyCluster) Hub() {}

// Hub marks ValkeyBackup as the conversion hub.
func (*ValkeyBackup) Hub() {}

// Hub marks ValkeyACL as the conversion hub.
func (*ValkeyACL) Hub() {}
