package sim

import (
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
func (w *World) observe(probes map[string]int) machine.Observation {
	obs := machine.Observation{Time: timeOf(w.tick), Spec: w.spec, Objects: w.objects}
	obs.Nodes = make([]machine.Node, 0, len(w.nodes))
	for _, n := range w.nodes {
		mn := machine.Node{Name: n.name, Shard: n.shard, Ordinal: n.ordinal}
		mn.Pod = machine.Pod{Exists: n.exists, Running: n.exists && n.running, IP: n.ip, Revision: n.revision, VolumeFromBefore: n.volumeFromBefore, VolumeBytes: n.volumeBytes}
		if !n.exists {
			mn.Pod.IP = ""
		}
		if w.operatorTalks(n) {
			probes[n.name] = 0
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
				HeardFromPrimary: n.linkUp && w.tick-n.heardAt <= 2,
				WritesFenced:     n.writesFenced,
				SyncFenced:       n.syncFenced,
				Snapshot:         n.snapshot,
				Joined:           n.joined,
			}
			// As CLUSTER NODES tells it: a node lists slots only while it is a primary; a
			// replica's own line has none.
			// A primary that left the bus (remove-node resets it) owns none any more.
			if w.topo.Mode == machine.ModeCluster && n.shard < len(w.slots) && n.role == machine.RolePrimary && n.joined {
				mn.Valkey.Slots = append([]machine.SlotRange(nil), w.slots[n.shard]...)
			}
			// A joined node's view holds every assigned slot (gossip is instant here); one that
			// met no one knows only its own.
			if w.topo.Mode == machine.ModeCluster {
				if n.joined {
					for _, rs := range w.slots {
						mn.Valkey.SlotsSeen += count(rs)
					}
				} else {
					mn.Valkey.SlotsSeen = count(mn.Valkey.Slots)
				}
				mn.Valkey.ClusterOK = mn.Valkey.SlotsSeen == machine.NumSlots
			}
		} else {
			probes[n.name]++
			mn.FailedProbes = probes[n.name]
		}
		obs.Nodes = append(obs.Nodes, mn)
	}
	return obs
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
// replication, on its replicas).
func (w *World) keysHeld(n *node) int {
	if w.topo.Mode != machine.ModeCluster {
		return len(n.log)
	}
	held := 0
	for _, id := range n.log {
		slot := slotOf(w.writes[id].key)
		if n.shard < len(w.slots) && inRanges(w.slots[n.shard], slot) {
			held++
		}
	}
	return held
}

func inRanges(rs []machine.SlotRange, slot int) bool {
	for _, r := range rs {
		if slot >= r.Start && slot <= r.End {
			return true
		}
	}
	return false
}
