package sim

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// epoch is the observations' clock origin: tick t is epoch + t seconds.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// timeOf is the observation time of a tick.
func timeOf(tick int64) time.Time { return epoch.Add(time.Duration(tick) * time.Second) }

// observe builds what the operator's survey sees: every pod the objects ask for (missing
// ones as not existing) and, for each node the operator reaches, its Valkey answers.
// probes holds the operator's consecutive failed probes per node and is updated.
func (w *World) observe(probes map[string]int) machine.Observation { return w.observeWith(probes, nil) }

// observeWith is observe with the operator's memory of which process last answered on each
// node (answered, updated; nil: none kept): a node running another process that does not
// answer yet is Restarted, as the pod's new container ID tells the real operator.
func (w *World) observeWith(probes map[string]int, answered map[string]string) machine.Observation {
	obs := machine.Observation{Time: timeOf(w.tick), Spec: w.spec, Objects: w.objects, Passwords: w.published}
	obs.Nodes = make([]machine.Node, 0, len(w.nodes))
	for _, n := range w.nodes {
		mn := machine.Node{Name: n.name, Shard: n.shard, Ordinal: n.ordinal}
		mn.Pod = machine.Pod{Exists: n.exists, Running: n.exists && n.running, Terminating: n.exists && n.terminating, IP: n.ip, Revision: n.revision, VolumeFromBefore: n.volumeFromBefore, VolumeBytes: n.volumeBytes}
		if !n.exists {
			mn.Pod.IP = ""
		}
		if w.operatorTalks(n) {
			probes[n.name] = 0
			if answered != nil {
				answered[n.name] = n.runID
			}
			mn.Reachable = true
			mn.Pod.Ready = true
			mn.Valkey = machine.Valkey{
				RunID:        n.runID,
				Role:         n.role,
				ReplID:       n.replID,
				ReplID2:      n.replID2,
				Offset:       n.offset(),
				Keys:         int64(w.keysHeld(n)),
				SecondOffset: n.secondOffset,
				PrimaryHost:  n.masterIP,
				LinkUp:       n.linkUp,
				// The operator's survey: link up and heard from the master within 2 s.
				HeardFromPrimary:  n.linkUp && w.tick-n.heardAt <= 2,
				WritesFenced:      n.writesFenced,
				SyncFenced:        n.syncFenced,
				HeldBack:          n.heldBack && !n.syncFenced && n.role == machine.RoleReplica,
				Snapshot:          n.snapshot,
				Passwords:         w.observePasswords(n),
				CertificateSerial: n.served,
				Sealed:            n.seal,
			}
			if w.topo.Mode == machine.ModeCluster {
				w.observeBus(n, &mn.Valkey)
			}
			mn.Valkey.Digest = w.digestOf(n, mn.Valkey)
			mn.Valkey.KeyHashes = w.keyHashesOf(n, mn.Valkey)
		} else {
			probes[n.name]++
			mn.FailedProbes = probes[n.name]
			last := answered[n.name]
			mn.Pod.Restarted = n.exists && n.running && last != "" && last != n.runID
		}
		obs.Nodes = append(obs.Nodes, mn)
	}
	if w.topo.Mode == machine.ModeCluster {
		machine.ReadClusterBus(obs.Nodes)
	}
	machine.CompareKeys(obs.Nodes)
	obs.ClaimsBeyond = w.claimsBeyond()
	obs.IdleClaims = w.idleClaims()
	obs.Sentinels = w.observeSentinels()
	return obs
}

// claimsBeyond lists the claims older than the cluster whose pods the objects do not ask for
// (the operator lists the cluster's claims by label and compares creation times), in name
// order: the map's order must not reach the machine.
func (w *World) claimsBeyond() []machine.Claim {
	var out []machine.Claim
	for _, n := range w.retained {
		if n.volumeFromBefore {
			out = append(out, machine.Claim{Name: n.name, Shard: n.shard, Ordinal: n.ordinal})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// idleClaims lists every retained claim (kept by a scale-down, a hibernation or a deleted
// cluster) on a place the objects do not ask for: no pod runs on it until they do.
func (w *World) idleClaims() []machine.Claim {
	var out []machine.Claim
	for _, n := range w.retained {
		if n.shard >= w.objects.Shards || n.ordinal > w.objects.Replicas {
			out = append(out, machine.Claim{Name: n.name, Shard: n.shard, Ordinal: n.ordinal})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// observeBus is the cluster-mode part of the survey, as CLUSTER MYID, CLUSTER NODES and
// CLUSTER INFO tell it: the node's ID, the slots it serves (a primary's own line lists them
// while it claims them; a replica's none), whether it is linked to another node, its view of
// the others, and what it sees of the slot map. A detached replica follows nothing as far as
// the survey is concerned.
func (w *World) observeBus(n *node, v *machine.Valkey) {
	v.NodeID = n.id
	if n.role == machine.RoleReplica {
		v.PrimaryID = n.masterID
	}
	if n.role == machine.RolePrimary && n.claim > 0 && n.shard < len(w.slots) {
		v.Slots = append([]machine.SlotRange(nil), w.slots[n.shard]...)
		v.ConfigEpoch = uint64(n.claim)
	}
	if n.role == machine.RolePrimary && len(v.Slots) == 0 {
		v.KeySlots = w.keySlotsOf(n)
	}
	v.Joined = n.linked
	v.Known = w.knownView(n)
	v.SlotsSeen, v.ClusterOK = w.slotsSeen(n, v.Known)
	if n.role == machine.RoleReplica && n.detached {
		v.PrimaryHost, v.LinkUp, v.HeardFromPrimary = "", false, false
	}
}

// keySlotsOf is what the survey reads of a primary serving no slots (CLUSTER
// COUNTKEYSINSLOT): the slots of the keys it holds, as ranges in slot order (nil: no keys).
func (w *World) keySlotsOf(n *node) []machine.SlotRange {
	var slots []int
	for _, id := range n.log {
		if w.holdsKeyOf(n, id) {
			slots = append(slots, slotOf(w.writes[id].key))
		}
	}
	slices.Sort(slots)
	var out []machine.SlotRange
	for _, s := range slices.Compact(slots) {
		if k := len(out) - 1; k >= 0 && out[k].End == s-1 {
			out[k].End = s
			continue
		}
		out = append(out, machine.SlotRange{Start: s, End: s})
	}
	return out
}

// count is how many slots ranges hold.
func count(ranges []machine.SlotRange) int {
	n := 0
	for _, r := range ranges {
		n += r.End - r.Start + 1
	}
	return n
}

// keysHeld is what DBSIZE says on n: its writes, and in cluster mode only those of slots its
// shard serves (MIGRATE and Atomic Slot Migration delete the moved keys on the source and, by
// replication, on its replicas) or served last before they were freed (DBSIZE counts every
// key of the keyspace, served or not: freeing a slot deletes nothing).
func (w *World) keysHeld(n *node) int {
	if w.topo.Mode != machine.ModeCluster {
		return len(n.log)
	}
	held := 0
	for _, id := range n.log {
		if w.holdsKeyOf(n, id) {
			held++
		}
	}
	return held
}

// digestOf is the data digest the operator's survey takes of n (see the survey in the
// operator's actuators): only of a node holding keys at offset 0 with client writes fenced, and
// from the data itself, the writes n holds (of its shard's slots, as keysHeld counts them) in
// no particular order. Two nodes holding the same writes have the same digest, whatever order
// they came in.
func (w *World) digestOf(n *node, v machine.Valkey) string {
	if v.Keys == 0 || v.Offset != 0 || !v.WritesFenced {
		return ""
	}
	var sum uint64
	for _, id := range n.log {
		if w.holdsKeyOf(n, id) {
			sum += mix64(uint64(id) + 1)
		}
	}
	return fmt.Sprintf("debug:%016x", sum)
}

// keyHashesOf are the hashes of n's keys the operator's survey reads where it takes a digest
// (see digestOf): one per write n holds (each write is a key of its own with its value), so
// that one node's hashes within another's is the world's ground truth, the writes of one
// within the other's.
func (w *World) keyHashesOf(n *node, v machine.Valkey) []uint64 {
	if v.Keys == 0 || v.Offset != 0 || !v.WritesFenced {
		return nil
	}
	out := make([]uint64, 0, v.Keys)
	for _, id := range n.log {
		if w.holdsKeyOf(n, id) {
			out = append(out, mix64(uint64(id)+1))
		}
	}
	slices.Sort(out)
	return out
}

// holdsKeyOf reports whether write id's key is one n holds (every key but in cluster mode,
// where n's shard serves some slots, or served them last before they were freed).
func (w *World) holdsKeyOf(n *node, id int32) bool {
	if w.topo.Mode != machine.ModeCluster {
		return true
	}
	slot := slotOf(w.writes[id].key)
	return n.shard < len(w.slots) && inRanges(w.slots[n.shard], slot) ||
		n.shard < len(w.freed) && inRanges(w.freed[n.shard], slot)
}

// mix64 scatters x over 64 bits (splitmix64's finalizer), so that a sum of mixed ids collides
// only by chance.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func inRanges(rs []machine.SlotRange, slot int) bool {
	for _, r := range rs {
		if slot >= r.Start && slot <= r.End {
			return true
		}
	}
	return false
}
