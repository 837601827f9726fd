package valkey

import (
	"context"
	"fmt"
	"slices"
	"strings"

	vk "github.com/valkey-io/valkey-go"
)

// Users of ValkeyACL resources: applied to running nodes with ACL SETUSER, and written into the
// users' file (auth.conf) that restarted and new pods start from. They are not machine state:
// none of them is a fence the machine reasons about.

// ACLUser is one user as a ValkeyACL describes it, passwords already hashed.
type ACLUser struct {
	Name    string
	Enabled bool
	// Hashes are the passwords' SHA-256 rules (#<hex>).
	Hashes []string
	Rules  []string
}

// aclCommands are what managing ValkeyACL users takes beyond ACL SETUSER: listing users, deleting
// those no resource asks for, and judging a user's rules (the node's command table, COMMAND,
// and ACL DRYRUN). Given live as well (nodes started from an older users' file lack them).
const aclCommands = "+acl|users +acl|deluser +acl|dryrun +command"

// PasswordRule is a password as an ACL rule (its SHA-256, never the text).
func PasswordRule(password string) string { return hashed(password) }

// setUser is the ACL SETUSER rules that make the user exactly u: from nothing (reset), then on
// or off, its passwords and its rules.
func (u ACLUser) setUser() []string {
	state := "off"
	if u.Enabled {
		state = "on"
	}
	out := append([]string{"reset", state}, u.Hashes...)
	return append(out, u.Rules...)
}

// configLine is u as a users' file line.
func (u ACLUser) configLine() string {
	return "user " + u.Name + " " + strings.Join(u.setUser(), " ") + "\n"
}

// reserved are the operator's own users: never deleted, never a ValkeyACL's.
var reserved = []string{UserOperator, UserClient, UserReplication, UserProbe, UserSentinel}

// Reserved says whether name is one of the operator's own users, which no ValkeyACL may take.
func Reserved(name string) bool { return slices.Contains(reserved, name) }

// ApplyACLs makes the node at podIP's ValkeyACL users exactly users: each set with ACL SETUSER
// (from nothing, so a rule removed from the resource goes), and every other user that is not the
// operator's own deleted (its resource was). It returns the names deleted.
func (p *Pool) ApplyACLs(ctx context.Context, podIP string, users []ACLUser) (deleted []string, err error) {
	err = p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		if err := allowACLs(ctx, c); err != nil {
			return err
		}
		want := map[string]bool{}
		for _, u := range users {
			want[u.Name] = true
			if err := c.Do(ctx, c.B().AclSetuser().Username(u.Name).Rule(u.setUser()...).Build()).Error(); err != nil {
				return fmt.Errorf("ACL SETUSER %s: %w", u.Name, err)
			}
		}
		have, err := c.Do(ctx, c.B().AclUsers().Build()).AsStrSlice()
		if err != nil {
			return fmt.Errorf("ACL USERS: %w", err)
		}
		for _, name := range have {
			if want[name] || slices.Contains(reserved, name) {
				continue
			}
			if err := c.Do(ctx, c.B().AclDeluser().Username(name).Build()).Error(); err != nil {
				return fmt.Errorf("ACL DELUSER %s: %w", name, err)
			}
			deleted = append(deleted, name)
		}
		return nil
	})
	return deleted, err
}

// allowACLs gives the operator's user aclCommands on a node started from an older users' file.
func allowACLs(ctx context.Context, c vk.Client) error {
	return c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule(strings.Fields(aclCommands)...).Build()).Error()
}

// FileSize is how many bytes u takes in the users' file.
func (u ACLUser) FileSize() int { return len(u.configLine()) }
