package valkey

import (
	"context"
	"fmt"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// RotationPasswords are one password rotation's passwords: for each rotated user (UserClient,
// UserOperator, UserReplication) the new one and the one it replaces. Passwords go to a node as
// their hashes (#<sha256> adds one, !<sha256> removes one), as in the users' file: the text is
// never in an ACL command.
type RotationPasswords struct {
	ID             string
	Users          []string
	Next, Previous Passwords
}

// Of is user's password in p.
func Of(p Passwords, user string) string {
	switch user {
	case UserOperator:
		return p.Operator
	case UserReplication:
		return p.Replication
	default:
		return p.Client
	}
}

// Set makes v user's password in p (Of's inverse).
func (p *Passwords) Set(user, v string) {
	switch user {
	case UserOperator:
		p.Operator = v
	case UserReplication:
		p.Replication = v
	default:
		p.Client = v
	}
}

func (r RotationPasswords) rotates(user string) bool {
	for _, u := range r.Users {
		if u == user {
			return true
		}
	}
	return false
}

// ComparePasswords is the survey's part of a rotation: whether each rotated user of the node
// accepts its new and its previous password (ACL GETUSER lists the hashes), and whether the
// node authenticates to a primary with the previous replication password (CONFIG GET
// masterauth). A masterauth that is neither (Detach's placeholder) counts as switched: it is
// not an old password that retiring would break, and ReplicaOf sets the published one.
func (p *Pool) ComparePasswords(ctx context.Context, podIP string, r RotationPasswords) (machine.PasswordState, error) {
	st := machine.PasswordState{Rotation: r.ID, HasNext: true, MasterAuthNext: true}
	err := p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		cmds := []vk.Completed{c.B().ConfigGet().Parameter("masterauth").Build()}
		for _, u := range r.Users {
			cmds = append(cmds, c.B().AclGetuser().Username(u).Build())
		}
		resps := c.DoMulti(ctx, cmds...)
		conf, err := resps[0].AsStrMap()
		if err != nil {
			return fmt.Errorf("CONFIG GET masterauth: %w", err)
		}
		if r.rotates(UserReplication) && conf["masterauth"] == r.Previous.Replication {
			st.MasterAuthNext = false
		}
		for i, u := range r.Users {
			user, err := resps[i+1].AsMap()
			if err != nil {
				return fmt.Errorf("ACL GETUSER %s: %w", u, err)
			}
			list := user["passwords"]
			hashes, err := list.AsStrSlice()
			if err != nil {
				return fmt.Errorf("ACL GETUSER %s passwords: %w", u, err)
			}
			next, prev := hashed(Of(r.Next, u))[1:], hashed(Of(r.Previous, u))[1:]
			has := map[string]bool{}
			for _, h := range hashes {
				has[h] = true
			}
			st.HasNext = st.HasNext && has[next]
			st.HasPrevious = st.HasPrevious || (has[prev] && prev != next)
		}
		return nil
	})
	if err != nil {
		return machine.PasswordState{}, err
	}
	return st, nil
}

// AddPasswords gives each rotated user of the node its new password beside the current one.
func (p *Pool) AddPasswords(ctx context.Context, podIP, runID string, r RotationPasswords) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		var cmds []vk.Completed
		for _, u := range r.Users {
			cmds = append(cmds, c.B().AclSetuser().Username(u).Rule(hashed(Of(r.Next, u))).Build())
		}
		return doAll(ctx, c, cmds...)
	})
}

// RetirePasswords removes the previous password of each rotated user of the node. The
// connections already authenticated with it stay (Valkey checks a password at AUTH only); the
// grace period was the clients' time to reconnect with the new one.
func (p *Pool) RetirePasswords(ctx context.Context, podIP, runID string, r RotationPasswords) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		var cmds []vk.Completed
		for _, u := range r.Users {
			if prev, next := Of(r.Previous, u), Of(r.Next, u); prev != next {
				cmds = append(cmds, c.B().AclSetuser().Username(u).Rule("!"+hashed(prev)[1:]).Build())
			}
		}
		if len(cmds) == 0 {
			return nil
		}
		return doAll(ctx, c, cmds...)
	})
}

// SwitchMasterAuth makes the node authenticate to its primary with the new replication
// password from its next connection on (the link that is up stays up).
func (p *Pool) SwitchMasterAuth(ctx context.Context, podIP, runID string, r RotationPasswords) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", r.Next.Replication).Build()).Error()
	})
}
