package valkey

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Port is the port every node listens on.
const Port = 6379

// Addr is a node's address from its pod IP.
func Addr(podIP string) string { return net.JoinHostPort(podIP, strconv.Itoa(Port)) }

// Survey asks one node what the machine needs: INFO server, replication, persistence and
// keyspace, and whether the client and replication users are on (the fences); and of a node
// whose data nothing else measures, a digest of it (see digest.go).
func (p *Pool) Survey(ctx context.Context, podIP string) (machine.Valkey, error) {
	v, _, err := p.SurveyWithStats(ctx, podIP)
	return v, err
}

// SurveyWithStats is Survey with the node's Stats, read from the same INFO (which then also
// carries the clients, memory and stats sections) and CLUSTER INFO.
func (p *Pool) SurveyWithStats(ctx context.Context, podIP string) (machine.Valkey, Stats, error) {
	var v machine.Valkey
	var st Stats
	db0, dataset := false, int64(0)
	err := p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		resps := c.DoMulti(ctx,
			c.B().Info().Section("server").Section("replication").Section("persistence").Section("keyspace").Section("cluster").
				Section("clients").Section("memory").Section("stats").Build(),
			c.B().AclGetuser().Username(UserClient).Build(),
			c.B().AclGetuser().Username(UserReplication).Build(),
			c.B().AclUsers().Build(),
			c.B().ConfigGet().Parameter("masterauth").Build(),
		)
		text, err := resps[0].ToString()
		if err != nil {
			return fmt.Errorf("INFO: %w", err)
		}
		info := parseInfo(text)
		db0, dataset = onlyDB0(info), infoInt(info, "used_memory_dataset")
		v = machine.Valkey{
			RunID:        info["run_id"],
			ReplID:       historyID(info["master_replid"]),
			ReplID2:      historyID(info["master_replid2"]),
			Offset:       infoInt(info, "master_repl_offset"),
			SecondOffset: infoInt(info, "second_repl_offset"),
			Loading:      info["loading"] == "1",
			Keys:         keyspaceKeys(info),
			Version:      info["valkey_version"],
		}
		switch info["role"] {
		case "master":
			v.Role = machine.RolePrimary
		case "slave", "replica":
			v.Role = machine.RoleReplica
			if host := info["master_host"]; host != PlaceholderHost {
				v.PrimaryHost = host
				v.LinkUp = info["master_link_status"] == "up"
				// The primary pings every second (repl-ping-replica-period 1), so a replica
				// that heard nothing for longer has lost it, even with the link still "up"
				// (that waits for repl-timeout).
				io := infoInt(info, "master_last_io_seconds_ago")
				v.HeardFromPrimary = v.LinkUp && io >= 0 && io <= 2
			}
		default:
			return fmt.Errorf("INFO reports role %q", info["role"])
		}
		for i, fenced := range []*bool{&v.WritesFenced, &v.SyncFenced} {
			m, err := resps[i+1].AsMap()
			if err != nil {
				return fmt.Errorf("ACL GETUSER: %w", err)
			}
			msg := m["flags"]
			flags, err := msg.AsStrSlice()
			if err != nil {
				return fmt.Errorf("ACL GETUSER flags: %w", err)
			}
			*fenced = !userIsOn(flags)
			if i == 1 {
				c := m["commands"]
				if cmds, err := c.ToString(); err == nil {
					v.ReplicationWidened = strings.Contains(cmds, "+@all")
				}
			}
		}
		// In the Sentinel topology a replica at replica-priority 0 with its replication user on
		// was held back for a planned hand-over (HoldBack); converge gives it its priority back.
		v.HeldBack = p.sentinelTopology() && v.Role == machine.RoleReplica && !v.SyncFenced && info["slave_priority"] == "0"
		// Users of ValkeyACLs write whatever the application user's fence says; unknown counts
		// as some (a node started by an older operator may refuse ACL USERS).
		v.OtherUsers = true
		if users, err := resps[3].AsStrSlice(); err == nil {
			v.OtherUsers = slices.ContainsFunc(users, func(u string) bool { return !Reserved(u) })
		}
		conf, err := resps[4].AsStrMap()
		if err != nil {
			return fmt.Errorf("CONFIG GET masterauth: %w", err)
		}
		masterauth := conf["masterauth"]
		v.Sealed = parseSeal(masterauth)
		if info["cluster_enabled"] == "1" {
			// Cluster mode: which slots it serves, and whether it has met anyone yet.
			view, err := clusterView(ctx, c)
			if err != nil {
				return err
			}
			if me, ok := view.Myself(); ok {
				v.NodeID = me.ID
				v.PrimaryID = me.PrimaryID
				v.ConfigEpoch = me.ConfigEpoch
				v.Slots = me.Slots
				v.OpenSlots = openSlots(view, me)
			}
			if v.Role == machine.RolePrimary && len(v.Slots) == 0 && v.Keys > 0 {
				// Whose slots its keys are, should ghosts serve slots (machine/ghostkeys.go).
				if v.KeySlots, err = keySlots(ctx, c); err != nil {
					return err
				}
			}
			// Joined: linked to another node on the cluster bus. Knowing others is not enough:
			// a pod re-created with a new IP, or every pod at once, comes back from nodes.conf
			// knowing its peers at addresses nobody answers at any more, and the operator must
			// introduce it again (add-node meets the pods' current IPs).
			for _, n := range view.Nodes {
				v.Joined = v.Joined || (!n.Myself && n.Connected)
				if !n.Myself && !n.Handshake {
					v.Known = append(v.Known, machine.KnownNode{ID: n.ID, IP: n.IP, Slots: machine.SlotCount(n.Slots), Ranges: n.Slots, Connected: n.Connected, ConfigEpoch: n.ConfigEpoch})
				}
			}
			if v.Role == machine.RoleReplica && masterauth == detachedPassword {
				// A detached replica (see Detach: its replication password is replaced) still
				// names its old primary; it follows nothing as far as the machine is concerned.
				v.PrimaryHost, v.LinkUp, v.HeardFromPrimary = "", false, false
			}
			for _, n := range view.Nodes {
				for _, r := range n.Slots {
					v.SlotsSeen += r.End - r.Start + 1
				}
			}
			text, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
			if err != nil {
				return fmt.Errorf("CLUSTER INFO: %w", err)
			}
			ci := parseInfo(strings.TrimPrefix(text, "txt:"))
			v.ClusterOK = ci["cluster_state"] == "ok"
			st = statsFrom(info, ci)
			return nil
		}
		st = statsFrom(info, nil)
		return nil
	})
	if err == nil && wantsDigest(v) {
		v.Digest, v.KeyHashes = p.dataEvidence(ctx, Addr(podIP), v.Keys, dataset, db0, surveyDigestBounds)
	}
	return v, st, err
}

// historyID maps Valkey's "no history" (forty zeros) to "": reported as an id, it made every
// node appear to continue the same non-history, and the machine refused to fail over
// (found by e2e/chaos).
func historyID(s string) string {
	if strings.Trim(s, "0") == "" {
		return ""
	}
	return s
}

// openSlots lists the node's open slots with the IP of the node at the other end, in slot
// order ("" when the view does not know that node).
func openSlots(view ClusterView, me ClusterNode) []machine.OpenSlot {
	ipOf := map[string]string{}
	for _, n := range view.Nodes {
		ipOf[n.ID] = n.IP
	}
	var out []machine.OpenSlot
	for slot, id := range me.Migrating {
		out = append(out, machine.OpenSlot{Slot: slot, Peer: ipOf[id]})
	}
	for slot, id := range me.Importing {
		out = append(out, machine.OpenSlot{Slot: slot, Peer: ipOf[id], Importing: true})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Slot < out[j].Slot || (out[i].Slot == out[j].Slot && !out[i].Importing)
	})
	return out
}
