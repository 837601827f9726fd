package valkey

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The sentinels of the Sentinel topology, as the operator reaches them: their survey (what
// machine.Sentinel holds) and the actions on them. The operator authenticates to a sentinel
// as to a data node (its own user).

// SentinelPort is the port every sentinel listens on.
const SentinelPort = 26379

// SentinelGroup is the name the sentinels monitor the cluster's primary under: the name
// Sentinel-aware clients ask for (the usual default of their configuration).
const SentinelGroup = "mymaster"

// SentinelAddr is a sentinel's address from its pod IP.
func SentinelAddr(podIP string) string { return net.JoinHostPort(podIP, strconv.Itoa(SentinelPort)) }

// ErrOtherSentinel refuses an action decided for a sentinel process that is gone: the
// sentinel at that address answers with another id.
var ErrOtherSentinel = errors.New("the sentinel answers with another id than the one the action was decided for")

// SurveySentinel asks the sentinel at podIP what the machine needs: its id, and for the group
// the primary's address it gives (GET-MASTER-ADDR-BY-NAME: the promoted replica's once a
// failover it leads reconfigures the replicas), the config epoch, its flags and the settings
// (SENTINEL MASTER). A sentinel that does not monitor the group answers Monitoring false.
func (p *Pool) SurveySentinel(ctx context.Context, podIP string) (machine.Sentinel, error) {
	s := machine.Sentinel{IP: podIP}
	err := p.run(ctx, SentinelAddr(podIP), func(ctx context.Context, c vk.Client) error {
		id, err := sentinelID(ctx, c)
		if err != nil {
			return err
		}
		s.ID = id
		master, ok, err := sentinelMaster(ctx, c)
		if err != nil || !ok {
			return err
		}
		addr, err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelGroup).Build()).AsStrSlice()
		if err != nil {
			return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
		}
		if len(addr) != 2 {
			return fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME answered %q", addr)
		}
		flags := strings.Split(master["flags"], ",")
		s.Monitoring, s.PrimaryIP = true, addr[0]
		s.ConfigEpoch, _ = strconv.ParseUint(master["config-epoch"], 10, 64)
		for _, f := range flags {
			switch f {
			case "failover_in_progress":
				s.FailingOver = true
			case "o_down":
				s.PrimaryDown = true
			}
		}
		s.Settings = settingsOf(master)
		s.Peers, _ = strconv.Atoi(master["num-other-sentinels"])
		s.Replicas, err = sentinelReplicas(ctx, c)
		return err
	})
	if err != nil {
		return machine.Sentinel{IP: podIP}, err
	}
	s.Reachable = true
	return s, nil
}

// settingsOf reads the group's settings from SENTINEL MASTER's answer.
func settingsOf(master map[string]string) machine.SentinelSettings {
	var s machine.SentinelSettings
	s.Quorum, _ = strconv.Atoi(master["quorum"])
	s.DownAfterMillis, _ = strconv.ParseInt(master["down-after-milliseconds"], 10, 64)
	s.FailoverTimeoutMillis, _ = strconv.ParseInt(master["failover-timeout"], 10, 64)
	s.ParallelSyncs, _ = strconv.Atoi(master["parallel-syncs"])
	return s
}

func sentinelID(ctx context.Context, c vk.Client) (string, error) {
	id, err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "MYID").Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("SENTINEL MYID: %w", err)
	}
	return id, nil
}

// sentinelMaster is SENTINEL MASTER of the group as field -> value; ok is false when the
// sentinel does not monitor it.
func sentinelMaster(ctx context.Context, c vk.Client) (map[string]string, bool, error) {
	r := c.Do(ctx, c.B().Arbitrary("SENTINEL", "MASTER", SentinelGroup).Build())
	if err := r.Error(); err != nil {
		if ve, ok := vk.IsValkeyErr(err); ok && strings.Contains(ve.Error(), "No such master") {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	msg, err := r.ToMessage()
	if err != nil {
		return nil, false, fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	m, err := fieldMap(msg)
	if err != nil {
		return nil, false, fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	return m, true, nil
}

// SentinelMonitor makes the sentinel at podIP, if it still answers with id, monitor the group
// with settings: one that does not monitor it starts to, at the primary at primaryIP (SENTINEL
// MONITOR, on the port the data nodes serve, TLS's when the primary is reached over TLS); one
// that does keeps the primary it names (the actuator never moves it: that would be a failover
// behind the sentinels' backs). Both then take the settings (SENTINEL SET), so a MONITOR whose
// SET failed is completed by the next one; with authPass (the sentinels' own user's password,
// "" where the data nodes ask none) also the credentials they reach the data nodes with
// (auth-user UserSentinel, auth-pass).
func (p *Pool) SentinelMonitor(ctx context.Context, podIP, id, primaryIP string, settings machine.SentinelSettings, authPass string) error {
	port := p.clientPort(primaryIP)
	return p.onSentinel(ctx, podIP, id, func(ctx context.Context, c vk.Client) error {
		if _, ok, err := sentinelMaster(ctx, c); err != nil {
			return err
		} else if !ok {
			monitor := c.B().Arbitrary("SENTINEL", "MONITOR", SentinelGroup, primaryIP, strconv.FormatInt(port, 10), strconv.Itoa(settings.Quorum)).Build()
			if err := c.Do(ctx, monitor).Error(); err != nil {
				return fmt.Errorf("SENTINEL MONITOR: %w", err)
			}
		}
		args := []string{"SET", SentinelGroup,
			"quorum", strconv.Itoa(settings.Quorum),
			"down-after-milliseconds", strconv.FormatInt(settings.DownAfterMillis, 10),
			"failover-timeout", strconv.FormatInt(settings.FailoverTimeoutMillis, 10),
			"parallel-syncs", strconv.Itoa(settings.ParallelSyncs)}
		if authPass != "" {
			args = append(args, "auth-user", UserSentinel, "auth-pass", authPass)
		}
		set := c.B().Arbitrary("SENTINEL").Args(args...).Build()
		if err := c.Do(ctx, set).Error(); err != nil {
			return fmt.Errorf("SENTINEL SET: %w", err)
		}
		return nil
	})
}

// SentinelRemove makes the sentinel at podIP, if it still answers with id, forget the group
// (SENTINEL REMOVE): it neither starts a failover of it nor votes for one from then on.
// Nothing when it monitors none.
func (p *Pool) SentinelRemove(ctx context.Context, podIP, id string) error {
	return p.onSentinel(ctx, podIP, id, func(ctx context.Context, c vk.Client) error {
		err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "REMOVE", SentinelGroup).Build()).Error()
		if ve, ok := vk.IsValkeyErr(err); ok && strings.Contains(ve.Error(), "No such master") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("SENTINEL REMOVE: %w", err)
		}
		return nil
	})
}

// SentinelReset makes the sentinel at podIP, if it still answers with id, forget the replicas
// and other sentinels it knows for the group and find them again (SENTINEL RESET): stale
// entries (a sentinel re-created with a new id, a replica gone from its address) go. Nothing
// when it monitors none (RESET matches no group then).
func (p *Pool) SentinelReset(ctx context.Context, podIP, id string) error {
	return p.onSentinel(ctx, podIP, id, func(ctx context.Context, c vk.Client) error {
		if err := c.Do(ctx, c.B().Arbitrary("SENTINEL", "RESET", SentinelGroup).Build()).Error(); err != nil {
			return fmt.Errorf("SENTINEL RESET: %w", err)
		}
		return nil
	})
}

// SentinelAnswersAs checks that the sentinel at podIP answers with id (ErrOtherSentinel when it
// answers with another): an action that stops a sentinel, which goes through the API server,
// stops only the process it was decided for.
func (p *Pool) SentinelAnswersAs(ctx context.Context, podIP, id string) error {
	return p.onSentinel(ctx, podIP, id, func(context.Context, vk.Client) error { return nil })
}

// onSentinel runs f on the sentinel at podIP if it still answers with id (ErrOtherSentinel
// otherwise): an action on a sentinel is carried out only on the process it was decided for.
func (p *Pool) onSentinel(ctx context.Context, podIP, id string, f func(context.Context, vk.Client) error) error {
	return p.run(ctx, SentinelAddr(podIP), func(ctx context.Context, c vk.Client) error {
		got, err := sentinelID(ctx, c)
		if err != nil {
			return err
		}
		if got != id {
			return fmt.Errorf("%w (decided for %s, found %s)", ErrOtherSentinel, id, got)
		}
		return f(ctx, c)
	})
}
