// Package users applies the ValkeyACL users of each cluster and writes the ValkeyACLs' status.
// The users are carried out beside the machine, like live configuration: they change no node's
// role or data. The cluster controller calls Users.Apply from every turn with the nodes that
// turn saw (Turn), takes the accepted set for the users' file of the auth Secret
// (Users.Accepted), and lets a deleted cluster go (Users.WithoutCluster, Users.Forget). The
// package imports no controller.
package users
