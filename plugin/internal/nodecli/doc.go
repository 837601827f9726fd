// Package nodecli runs valkey-cli inside a ValkeyCluster's pods through the API server's
// pods/exec, authenticated without the password on any command line.
//
// The password is read from the cluster's auth Secret with the user's own credentials and
// written into the exec stream's stdin, where valkey-cli --askpass reads it: it is never in
// the plugin's argv, in the exec'd process's argv (visible to every process of the node in
// /proc), in the pod spec or in shell history. The pod's own REDISCLI_AUTH is not used: a
// kubelet resolves it once, when the container starts, so after a password rotation it holds
// a password the nodes no longer accept, while the Secret always holds one every running
// node accepts.
package nodecli
