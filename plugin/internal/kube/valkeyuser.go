package kube

import (
	"fmt"
	"slices"
)

// ValkeyUserFlag is the flag of the verbs that name a Valkey user (cli, rotate). It is not
// --user: that is kubectl's (the kubeconfig's user to connect as), a persistent flag of
// every verb, and a verb's own --user would shadow it there.
const ValkeyUserFlag = "valkey-user"

// OldValkeyUserFlag says what to type instead when kubectl's --user names one of
// valkeyUsers and the kubeconfig has no user of that name: the verbs' own --user named the
// Valkey user before it was renamed --valkey-user, and a command typed that way would
// otherwise fail with client-go's "auth info ... does not exist", which does not say why.
// A kubeconfig that has a user of that name (k3s names its user default) is kubectl's
// meaning, and nil.
func (f *Flags) OldValkeyUserFlag(valkeyUsers ...string) error {
	name := f.overrides.Context.AuthInfo
	if name == "" || !slices.Contains(valkeyUsers, name) {
		return nil
	}
	if raw, err := f.clientConfig().RawConfig(); err == nil {
		if _, ok := raw.AuthInfos[name]; ok {
			return nil
		}
	}
	return fmt.Errorf("--user %s: --user is kubectl's, the kubeconfig's user to connect as (it has none named %s); name the Valkey user with --%s %s", name, name, ValkeyUserFlag, name)
}
