package users

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
)

// usersFileBudget bounds the ValkeyACL users' lines in the users' file. The file lives in the
// cluster's auth Secret, which the API server refuses past 1 MiB; the auth Secret is written at
// the start of every turn, so a Secret that no longer fits would stop every turn before a
// failover could be decided. The rest of the Secret (the operator's own users and passwords, a
// rotation's pending ones) takes a few KiB, so a quarter of the limit is left for it.
const usersFileBudget = 768 << 10

// usersFile counts the bytes the accepted users take in the users' file, oldest ValkeyACL
// first: a user that would push the file past usersFileBudget is refused, and the users
// accepted before it keep working.
type usersFile struct{ size int }

func (f *usersFile) fits(u valkey.ACLUser) bool { return f.size+u.FileSize() <= usersFileBudget }

func (f *usersFile) add(u valkey.ACLUser) { f.size += u.FileSize() }

// overflow is the refusal of u, which does not fit.
func (f *usersFile) overflow(u valkey.ACLUser) string {
	return fmt.Sprintf("the user takes %d bytes of the users' file and the users accepted before it take %d: together they pass the %d bytes the cluster's auth Secret has room for (the API server refuses a Secret over 1 MiB); "+
		"shorten the rules (a category such as +@read rather than many commands, one key pattern rather than many) or remove another ValkeyACL of this cluster", u.FileSize(), f.size, usersFileBudget)
}
