package valkey

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Cluster mode (topology Cluster): the operator forms the cluster itself, without a Job and
// without valkey-cli, step by step as the machine decides: CLUSTER MEET, ADDSLOTSRANGE by the
// machine's slot plan, CLUSTER REPLICATE. Each step is idempotent, like every action here.

// ClusterNode is one line of CLUSTER NODES: a node as the asked node knows it.
type ClusterNode struct {
	ID      string
	IP      string
	Port    int
	Myself  bool
	Primary bool
	// PrimaryID is the primary a replica follows ("" for a primary).
	PrimaryID string
	// Failing is true when the node is flagged fail or pfail.
	Failing bool
	// Connected is the link state of the cluster bus to it.
	Connected bool
	// Handshake: a node being met, under a random ID until it answers with its own.
	Handshake bool
	// ConfigEpoch is the epoch of its claim on its slots: the higher claim on a slot wins.
	ConfigEpoch uint64
	Slots       []machine.SlotRange
	// Migrating and Importing are the node's open slots (only its own line lists them): slot
	// to the ID of the node it migrates to, or imports from.
	Migrating, Importing map[int]string
}

// ClusterView is CLUSTER NODES as one node sees the cluster.
type ClusterView struct {
	Nodes []ClusterNode
}

// Myself is the asked node.
func (v ClusterView) Myself() (ClusterNode, bool) {
	for _, n := range v.Nodes {
		if n.Myself {
			return n, true
		}
	}
	return ClusterNode{}, false
}

// OpenSlots is how many slots the asked node has open (migrating or importing).
func (v ClusterView) OpenSlots() int {
	me, _ := v.Myself()
	return len(me.Migrating) + len(me.Importing)
}

// OwnerOf is the primary that serves slot in this view, unless it is flagged failing.
func (v ClusterView) OwnerOf(slot int) (ClusterNode, bool) {
	for _, n := range v.Nodes {
		if !n.Primary || n.Failing {
			continue
		}
		for _, r := range n.Slots {
			if slot >= r.Start && slot <= r.End {
				return n, true
			}
		}
	}
	return ClusterNode{}, false
}

// Knows reports whether the view has a node at ip.
func (v ClusterView) Knows(ip string) bool {
	for _, n := range v.Nodes {
		if n.IP == ip {
			return true
		}
	}
	return false
}

// ParseClusterNodes reads CLUSTER NODES: "<id> <ip:port@cport[,hostname]> <flags> <primary>
// <ping-sent> <pong-recv> <epoch> <link-state> <slot> <slot> ...", where a slot is "N" or
// "N-M", or an open migration "[N->-id]" / "[N-<-id]" (skipped).
func ParseClusterNodes(text string) (ClusterView, error) {
	var v ClusterView
	// Over RESP3 the reply is a verbatim string, which valkey-go hands over with its format.
	text = strings.TrimPrefix(text, "txt:")
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return v, fmt.Errorf("CLUSTER NODES: address %q: %w", f[1], err)
		}
		n := ClusterNode{ID: f[0], IP: host, Connected: f[7] == "connected"}
		n.Port, _ = strconv.Atoi(port)
		if n.ConfigEpoch, err = strconv.ParseUint(f[6], 10, 64); err != nil {
			return v, fmt.Errorf("CLUSTER NODES: config epoch %q: %w", f[6], err)
		}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "myself":
				n.Myself = true
			case "master":
				n.Primary = true
			case "fail", "fail?":
				n.Failing = true
			case "handshake":
				n.Handshake = true
			}
		}
		if f[3] != "-" {
			n.PrimaryID = f[3]
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				openSlot(&n, s)
				continue
			}
			lo, hi, found := strings.Cut(s, "-")
			start, err := strconv.Atoi(lo)
			if err != nil {
				return v, fmt.Errorf("CLUSTER NODES: slot %q: %w", s, err)
			}
			end := start
			if found {
				if end, err = strconv.Atoi(hi); err != nil {
					return v, fmt.Errorf("CLUSTER NODES: slot %q: %w", s, err)
				}
			}
			if start < 0 || end < start || end >= machine.NumSlots {
				return v, fmt.Errorf("CLUSTER NODES: slot %q is not a range of 0-%d", s, machine.NumSlots-1)
			}
			n.Slots = append(n.Slots, machine.SlotRange{Start: start, End: end})
		}
		v.Nodes = append(v.Nodes, n)
	}
	return v, nil
}

// openSlot records an open migration, "[N->-id]" (migrating to id) or "[N-<-id]" (importing
// from id), on n.
func openSlot(n *ClusterNode, s string) {
	s = strings.Trim(s, "[]")
	if slot, id, ok := strings.Cut(s, "->-"); ok {
		if v, err := strconv.Atoi(slot); err == nil {
			if n.Migrating == nil {
				n.Migrating = map[int]string{}
			}
			n.Migrating[v] = id
		}
		return
	}
	if slot, id, ok := strings.Cut(s, "-<-"); ok {
		if v, err := strconv.Atoi(slot); err == nil {
			if n.Importing == nil {
				n.Importing = map[int]string{}
			}
			n.Importing[v] = id
		}
	}
}

// clusterView asks the node on c for CLUSTER NODES.
func clusterView(ctx context.Context, c vk.Client) (ClusterView, error) {
	text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return ClusterView{}, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	return ParseClusterNodes(text)
}

// ClusterNodes is CLUSTER NODES of the node at podIP.
func (p *Pool) ClusterNodes(ctx context.Context, podIP string) (ClusterView, error) {
	var v ClusterView
	err := p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) (err error) {
		v, err = clusterView(ctx, c)
		return err
	})
	return v, err
}

// Meet introduces the node at podIP to the nodes at peerIPs on the cluster bus (CLUSTER MEET);
// gossip then tells the rest. A peer the node knows already is not met again, so repeating
// the action sends nothing.
func (p *Pool) Meet(ctx context.Context, podIP, runID string, peerIPs ...string) error {
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		for _, peer := range peerIPs {
			if peer == podIP || v.Knows(peer) {
				continue
			}
			if err := c.Do(ctx, c.B().ClusterMeet().Ip(peer).Port(p.clientPort(peer)).Build()).Error(); err != nil {
				return fmt.Errorf("CLUSTER MEET %s: %w", peer, err)
			}
		}
		return nil
	})
}

// AssignSlots makes the node at podIP serve ranges (CLUSTER ADDSLOTSRANGE), the part it does not
// serve yet. A slot another node serves is refused, not taken: slots move only by migration.
// "Serves" is as the asked node knows it, which gossip may not have reached yet: the machine
// assigns only slots no node of its whole observation serves. A slot whose owner, as the asked
// node's view names it, says itself that it does not serve it and holds no key in it is taken
// back (an overruled hand-over, disclaimed.go).
func (p *Pool) AssignSlots(ctx context.Context, podIP, runID string, ranges []machine.SlotRange) error {
	return p.guardFor(ctx, podIP, runID, p.bulkTimeout(machine.SlotCount(ranges)), func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		owner := map[int]ClusterNode{}
		for _, n := range v.Nodes {
			for _, r := range n.Slots {
				for s := r.Start; s <= r.End; s++ {
					owner[s] = n
				}
			}
		}
		var missing []int
		elsewhere := map[string][]int{} // by the ID of the node this view names
		for _, r := range ranges {
			for s := r.Start; s <= r.End; s++ {
				o, owned := owner[s]
				switch {
				case !owned:
					missing = append(missing, s)
				case !o.Myself:
					elsewhere[o.ID] = append(elsewhere[o.ID], s)
				}
			}
		}
		var taken []int
		for id, slots := range elsewhere {
			o := owner[slots[0]]
			if err := p.disclaims(ctx, o.IP, slots); err != nil {
				return fmt.Errorf("slot %d is served by %s (%s), not %s: slots move only by migration (asked, %s: %w)", slots[0], id, o.IP, podIP, o.IP, err)
			}
			taken = append(taken, slots...)
		}
		if len(taken) > 0 {
			me, _ := v.Myself()
			if err := takeBack(ctx, c, me.ID, taken); err != nil {
				return fmt.Errorf("taking back slots %v, which the node its view names disclaims: %w", rangesOf(taken), err)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		cmd := c.B().ClusterAddslotsrange().StartSlotEndSlot()
		for _, r := range rangesOf(missing) {
			cmd = cmd.StartSlotEndSlot(int64(r.Start), int64(r.End))
		}
		return c.Do(ctx, cmd.Build()).Error()
	})
}

// rangesOf groups slot numbers into contiguous ranges.
func rangesOf(slots []int) []machine.SlotRange {
	sort.Ints(slots)
	var out []machine.SlotRange
	for _, s := range slots {
		if n := len(out); n > 0 && out[n-1].End == s-1 {
			out[n-1].End = s
			continue
		}
		out = append(out, machine.SlotRange{Start: s, End: s})
	}
	return out
}

// Replicate makes the node at podIP a replica of the node at primaryIP (CLUSTER REPLICATE), the
// cluster-mode ReplicaOf: as there, the node stops serving as a sync source, gets the
// replication password back (Detach replaced it) and serves reads. It meets the primary first
// when it does not know it yet, and waits for the handshake to name it. Nothing is sent when it
// follows that primary already. Valkey refuses a primary that holds slots or keys: a primary
// that serves slots is refused (the error is returned), one without slots is emptied first, as
// REPLICAOF's full sync would replace its data.
func (p *Pool) Replicate(ctx context.Context, podIP, runID, primaryIP, primaryRunID, replicationPassword string) error {
	if primaryRunID != "" {
		// The primary must still be the process the machine chose: one back on an empty
		// volume is a new node, and following its ID would leave the old one's slots to no
		// replica that could take them over.
		if err := p.Alive(ctx, primaryIP, primaryRunID); err != nil {
			return fmt.Errorf("primary: %w", err)
		}
	}
	var primaryID string
	if err := p.run(ctx, Addr(primaryIP), func(ctx context.Context, c vk.Client) (err error) {
		primaryID, err = c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		return err
	}); err != nil {
		return fmt.Errorf("CLUSTER MYID of the primary %s: %w", primaryIP, err)
	}
	return p.guard(ctx, podIP, runID, func(ctx context.Context, c vk.Client) error {
		v, err := clusterView(ctx, c)
		if err != nil {
			return err
		}
		if me, ok := v.Myself(); ok && me.PrimaryID == primaryID {
			// Already following it, maybe re-pointed by Valkey itself (a takeover re-points
			// the old primary's other replicas): a replica detached for the failover still
			// has the wrong password and would never sync; it reconnects with this one at its
			// next replication cron tick.
			return doAll(ctx, c,
				setUser(c, UserReplication, false),
				c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", replicationPassword).Build(),
				setUser(c, UserClient, true))
		}
		if err := doAll(ctx, c,
			setUser(c, UserReplication, false),
			c.B().ConfigSet().ParameterValue().ParameterValue("masterauth", replicationPassword).Build(),
		); err != nil {
			return err
		}
		// A former primary whose slots were taken over (a failover while it was away) comes
		// back as a primary without slots that still holds its old keys, and Valkey refuses to
		// make it a replica. Its keys are what REPLICAOF would replace with a full sync in a
		// replication group: the machine decided that this node follows the recorded primary,
		// after electing the most complete copy. A node that serves slots is never emptied.
		if me, ok := v.Myself(); ok && me.Primary && len(me.Slots) == 0 {
			n, err := c.Do(ctx, c.B().Dbsize().Build()).AsInt64()
			if err != nil {
				return err
			}
			if n > 0 {
				if err := flushFormerPrimary(ctx, c, p.writeQuorum()); err != nil {
					return fmt.Errorf("emptying the former primary (%d keys of slots it no longer serves) before it replicates: %w", n, err)
				}
			}
		}
		if !v.Knows(primaryIP) {
			if err := c.Do(ctx, c.B().ClusterMeet().Ip(primaryIP).Port(p.clientPort(primaryIP)).Build()).Error(); err != nil {
				return fmt.Errorf("CLUSTER MEET %s: %w", primaryIP, err)
			}
		}
		// Right after a MEET the node knows the primary by a temporary id until the handshake
		// completes (a cluster cron tick, 100 ms): REPLICATE would answer "Unknown node".
		deadline := time.Now().Add(3 * time.Second)
		for {
			v, err := clusterView(ctx, c)
			if err != nil {
				return err
			}
			if v.knowsID(primaryID) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s does not know the primary %s (%s) yet: the cluster bus handshake has not completed", podIP, primaryIP, primaryID)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		return doAll(ctx, c,
			c.B().ClusterReplicate().NodeId(primaryID).Build(),
			setUser(c, UserClient, true),
		)
	})
}

// flushFormerPrimary empties a primary without slots. Without replicas, its write quorum
// (min-replicas-to-write) refuses FLUSHALL like any write: the quorum is lifted for the flush
// and put back at once (the node serves no slot, and its client user is off, so no client write
// can reach it meanwhile). It is put back to quorum, the operator's value ("": the node's
// before the flush, which a flush interrupted after lifting it would have left at 0).
func flushFormerPrimary(ctx context.Context, c vk.Client, quorum string) error {
	if quorum == "" {
		cur, err := c.Do(ctx, c.B().ConfigGet().Parameter("min-replicas-to-write").Build()).AsStrMap()
		if err != nil {
			return err
		}
		quorum = cur["min-replicas-to-write"]
	}
	if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("min-replicas-to-write", "0").Build()).Error(); err != nil {
		return err
	}
	// FLUSHALL is not among the operator's rules at rest: it grants itself the command for this
	// one flush and takes it back.
	if err := c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule("+flushall").Build()).Error(); err != nil {
		return err
	}
	flushErr := c.Do(ctx, c.B().Flushall().Build()).Error()
	if err := c.Do(ctx, c.B().AclSetuser().Username(UserOperator).Rule("-flushall").Build()).Error(); err != nil {
		flushErr = errors.Join(flushErr, err)
	}
	if quorum != "" {
		if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("min-replicas-to-write", quorum).Build()).Error(); err != nil {
			return errors.Join(flushErr, fmt.Errorf("restoring min-replicas-to-write %s: %w", quorum, err))
		}
	}
	return flushErr
}

// knowsID reports whether the view has the node with cluster id id.
func (v ClusterView) knowsID(id string) bool {
	for _, n := range v.Nodes {
		if n.ID == id {
			return true
		}
	}
	return false
}

// HandOverInCluster moves a shard's primary role to a caught-up replica without losing a write,
// the cluster-mode HandOver (FAILOVER TO is refused in cluster mode): CLUSTER FAILOVER on the
// replica, Valkey's manual failover, in which the primary pauses its clients, the replica
// processes everything the primary had, and only then takes the slots over with a new epoch;
// the old primary becomes its replica. It waits until the replica reports itself primary, at
// most timeout (Valkey's own manual failover gives up after 5 s and the primary resumes).
func (p *Pool) HandOverInCluster(ctx context.Context, fromIP, fromRunID, toIP, toRunID string, timeout time.Duration) error {
	if err := p.Alive(ctx, fromIP, fromRunID); err != nil {
		return fmt.Errorf("hand-over source: %w", err)
	}
	return p.guard(ctx, toIP, toRunID, func(ctx context.Context, c vk.Client) error {
		info, err := replicationInfo(ctx, c)
		if err != nil {
			return err
		}
		if info["role"] == "master" {
			return nil // done already, or never a replica: the next survey says which
		}
		if info["master_host"] != fromIP {
			return fmt.Errorf("%s follows %s, not the primary %s it should take over from", toIP, info["master_host"], fromIP)
		}
		// The target becomes a sync source for the old primary once it has taken over.
		if err := doAll(ctx, c, setUser(c, UserReplication, true), c.B().ClusterFailover().Build()); err != nil {
			return err
		}
		deadline := time.Now().Add(timeout)
		for {
			info, err := replicationInfo(ctx, c)
			if err != nil {
				return err
			}
			if info["role"] == "master" {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("hand-over: %s is not primary %s after CLUSTER FAILOVER", toIP, timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// RemoveFromCluster takes the node at podIP off the cluster bus before its pod is removed:
// every other node at peerIPs forgets it (CLUSTER FORGET), then the node itself forgets the
// cluster (CLUSTER RESET SOFT), so that it cannot gossip itself back in. Valkey refuses to reset
// a primary that holds keys, so a node still serving data is never emptied this way; the
// machine removes only replicas of a primary that stays, or primaries whose slots moved away.
// A peer that does not know the node (any more) is skipped, which makes it idempotent; a peer
// that does not answer fails the action, to be tried again (it would keep the node otherwise).
//
// A replica of the node is skipped too: Valkey refuses it ("Can't forget my master!"), and it
// leaves with its primary (its own remove-node resets it). Failing on it left the primary
// forgotten by every other node but never drained nor reset: its pod was then stopped under
// clients that still sent it commands for the slots it had just given away, and they met a
// closed connection (EOF) instead of a MOVED (found on real Valkey 9.1 in a 5 → 3 resharding,
// where a shard's primary and replica are removed in the same turn).
func (p *Pool) RemoveFromCluster(ctx context.Context, podIP string, peerIPs []string) error {
	var id string
	if err := p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) (err error) {
		id, err = c.Do(ctx, c.B().ClusterMyid().Build()).ToString()
		return err
	}); err != nil {
		return fmt.Errorf("CLUSTER MYID of %s: %w", podIP, err)
	}
	var others []string
	for _, peer := range peerIPs {
		if peer != podIP {
			others = append(others, peer)
		}
	}
	if err := p.forgetEverywhere(ctx, id, others, true); err != nil {
		return fmt.Errorf("removing %s: %w", podIP, err)
	}
	if err := p.drainRedirections(ctx, podIP); err != nil {
		return fmt.Errorf("removing %s: %w", podIP, err)
	}
	return p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().ClusterReset().Soft().Build()).Error()
	})
}

// RedirectionQuiet and RedirectionDrainMax bound drainRedirections: a cluster client refreshes
// its slot map within about a second of its first MOVED (valkey-go: at a random moment of the
// next second), so a node that answered no MOVED for RedirectionQuiet has no busy client
// left behind; an idle or stuck client does not hold a removal longer than RedirectionDrainMax.
var (
	RedirectionQuiet    = time.Second
	RedirectionDrainMax = 5 * time.Second
)

// drainRedirections lets the node at podIP go on answering MOVED while clients still send it
// commands for the slots it gave away, until it answered none for RedirectionQuiet (at most
// RedirectionDrainMax). A node reset at once (CLUSTER RESET knows no slot owner) answers those
// clients "CLUSTERDOWN Hash slot not served" instead (found on real Valkey 9.1: a client met it
// in a 5 → 3 resharding). MOVED replies are counted in INFO errorstats; a node that never
// answered one (a replica nobody reads from) is reset at once.
func (p *Pool) drainRedirections(ctx context.Context, podIP string) error {
	moved := func() (int64, error) { return p.redirections(ctx, podIP) }
	last, err := moved()
	if err != nil || last == 0 {
		return err
	}
	start := time.Now()
	quietSince := start
	for time.Since(quietSince) < RedirectionQuiet && time.Since(start) < RedirectionDrainMax {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		n, err := moved()
		if err != nil {
			return err
		}
		if n != last {
			last, quietSince = n, time.Now()
		}
	}
	return nil
}

// redirections is how many MOVED replies the node at podIP has answered since it started.
func (p *Pool) redirections(ctx context.Context, podIP string) (int64, error) {
	var n int64
	err := p.run(ctx, Addr(podIP), func(ctx context.Context, c vk.Client) error {
		text, err := c.Do(ctx, c.B().Info().Section("errorstats").Build()).ToString()
		n = redirectionCount(text)
		return err
	})
	return n, err
}

// redirectionCount is the count of errorstat_MOVED in an INFO errorstats reply (0 when the
// node never answered MOVED: Valkey lists only errors it replied).
func redirectionCount(info string) int64 {
	v, ok := parseInfo(info)["errorstat_MOVED"]
	if !ok {
		return 0
	}
	count, _, _ := strings.Cut(strings.TrimPrefix(v, "count="), ",")
	n, _ := strconv.ParseInt(count, 10, 64)
	return n
}

// ForgetEverywhere makes every node at peerIPs forget the node id (CLUSTER FORGET), each node
// that still knows it, all in one action: Valkey bans a forgotten ID from gossip for 60 s only,
// so a node told late would learn it again from one not told yet. A node that has id for its
// own primary refuses ("Can't forget my master!"): that is an error, the replica must follow a
// pod first.
func (p *Pool) ForgetEverywhere(ctx context.Context, id string, peerIPs []string) error {
	return p.forgetEverywhere(ctx, id, peerIPs, false)
}

// forgetEverywhere is ForgetEverywhere; with skipReplicas, a peer that replicates id is left
// alone (see RemoveFromCluster).
func (p *Pool) forgetEverywhere(ctx context.Context, id string, peerIPs []string, skipReplicas bool) error {
	var errs []error
	for _, peer := range peerIPs {
		err := p.run(ctx, Addr(peer), func(ctx context.Context, c vk.Client) error {
			v, err := clusterView(ctx, c)
			if err != nil || !v.knowsID(id) {
				return err
			}
			if me, ok := v.Myself(); ok && skipReplicas && me.PrimaryID == id {
				return nil
			}
			return c.Do(ctx, c.B().ClusterForget().NodeId(id).Build()).Error()
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s forgetting %s: %w", peer, id, err))
		}
	}
	return errors.Join(errs...)
}
