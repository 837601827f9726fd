package chaos

import (
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// The cluster-mode schedule: the same faults, on one shard of a Cluster topology.
const (
	// probeSlot is the hash slot of the key "chaos:probe" (CRC16 mod 16384).
	probeSlot = 12690
	// chaosShards is the shard count of the Cluster under test (each of pods pods).
	chaosShards = 2
	// clusterBase names the Cluster under test.
	clusterBase = "sharded"
)

// TestChaosCluster draws fault schedules as TestChaos does and plays each against one shard
// (drawn) of a real Cluster topology of 2 shards of 3 pods (Durable), while a client writes
// keys of one slot of that shard straight to the primary serving it (asking a node which one
// after every reconnection, as a cluster client does). After the heal the cluster must settle
// (Steady, every slot served, in every shard exactly the recorded primary and its replicas
// linked and caught up), valkey-cli --cluster check must find it whole, and the writes,
// the canary, the history and the conditions are checked as for a replication group.
func TestChaosCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos against real processes takes minutes")
	}
	h := newHarness(t)
	h.shards = chaosShards
	h.check(t, " (cluster)", 2, 4, func(rt *rapid.T, minSteps, maxSteps int) schedule {
		s := scheduleGen([]v1alpha1.Profile{v1alpha1.ProfileDurable}, clusterMenu, minSteps, maxSteps).Draw(rt, "schedule")
		s.Shard = rapid.IntRange(0, chaosShards-1).Draw(rt, "shard")
		return s
	})
}

// clusterMenu is the menu with resharding: the shard count changes under the faults.
var clusterMenu = append(append([]sim.FaultKind(nil), menu...), faultReshard)

// reshard asks for the other shard count (chaosShards or one more) with a merge patch of
// spec.shards, as kubectl valkey reshard --shards does.
func (h *harness) reshard(name string) (string, error) {
	vc, err := h.get(name)
	if err != nil {
		return "", err
	}
	to := int32(chaosShards)
	if vc.Spec.Shards == chaosShards {
		to = chaosShards + 1
	}
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"spec":{"shards":%d}}`, to)
	if err := k.Patch(ctx, &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", err
	}
	return fmt.Sprintf("asked for %d shards (was %d)", to, vc.Spec.Shards), nil
}

// sharded reports whether vc is a Cluster topology.
func sharded(vc *v1alpha1.ValkeyCluster) bool { return vc.Spec.Topology == v1alpha1.TopologyCluster }

// podCount is how many pods vc runs when converged.
func podCount(vc *v1alpha1.ValkeyCluster) int {
	if sharded(vc) {
		return int(vc.Spec.Shards) * pods
	}
	return pods
}

// steadyShards is steady for a Cluster topology: Steady, the spec observed, every pod ready,
// one primary per shard, every slot served.
func steadyShards(vc *v1alpha1.ValkeyCluster) bool {
	primaries := 0
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRolePrimary {
			primaries++
		}
	}
	n := podCount(vc)
	return vc.Status.State == v1alpha1.StateSteady && vc.Status.ObservedGeneration == vc.Generation &&
		vc.Status.ReadyNodes == fmt.Sprintf("%d/%d", n, n) && len(vc.Status.Nodes) == n &&
		primaries == int(vc.Spec.Shards) && len(vc.Status.Shards) == int(vc.Spec.Shards) &&
		vc.Status.Slots == "16384/16384"
}

// prepareShard picks, for a schedule on shard s of vc, a hash tag of a slot that shard serves.
func (h *harness) prepareShard(vc *v1alpha1.ValkeyCluster, s int) error {
	h.shard = s
	lo, hi, ok := strings.Cut(strings.Split(vc.Status.Shards[s].Slots, ",")[0], "-")
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	z, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("shard %d serves %q", s, vc.Status.Shards[s].Slots)
	}
	addr, err := h.clientAddr(vc)
	if err != nil {
		return err
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return err
	}
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	for i := 0; i < 10000; i++ {
		tag := fmt.Sprintf("c%d", i)
		v, err := c.Do(2*time.Second, "CLUSTER", "KEYSLOT", tag)
		if err != nil {
			return err
		}
		if slot := int(v.(int64)); slot >= a && slot <= z {
			h.tag, h.slot = tag, slot
			return nil
		}
	}
	return fmt.Errorf("no hash tag found for slots %d-%d", a, z)
}

// slotOwner is the address of the primary serving the schedule's slot, as the first node that
// answers says (before prepareShard: the first shard's primary, to ask CLUSTER KEYSLOT).
func (h *harness) slotOwner(vc *v1alpha1.ValkeyCluster) (string, error) {
	return h.ownerOf(vc, h.slot)
}

// ownerOf is the address of the primary serving slot, as the first node that answers says.
func (h *harness) ownerOf(vc *v1alpha1.ValkeyCluster, slot int) (string, error) {
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return "", err
	}
	last := fmt.Errorf("no node of %s has an IP", vc.Name)
	for _, n := range vc.Status.Nodes {
		if n.IP == "" {
			continue
		}
		c, err := resp.Dial(net.JoinHostPort(n.IP, "6379"), h.clientIP, "", pass, time.Second)
		if err != nil {
			last = err
			continue
		}
		v, err := c.Do(time.Second, "CLUSTER", "NODES")
		_ = c.Close()
		if err != nil {
			last = err
			continue
		}
		text, _ := v.(string)
		view, err := valkey.ParseClusterNodes(text)
		if err != nil {
			last = err
			continue
		}
		if owner, ok := view.OwnerOf(slot); ok {
			return net.JoinHostPort(owner.IP, strconv.Itoa(owner.Port)), nil
		}
		last = fmt.Errorf("%s names no primary for slot %d", n.Pod, slot)
	}
	return "", last
}

// checkShards is checkNodes for a Cluster topology: every node answers; in each shard exactly
// the recorded primary says it is one, every other node of the shard follows it, linked and at
// its offset; and valkey-cli --cluster check (an independent oracle) finds every slot covered,
// every node agreeing and no slot open.
func (h *harness) checkShards(vc *v1alpha1.ValkeyCluster) []violation {
	infos, err := h.survey(vc)
	if err != nil {
		return []violation{{vReplicaConverge, "survey: " + err.Error()}}
	}
	names := kube.NamesOf(valkeyapi.HubOf(vc))
	byShard := map[int][]nodeInfo{}
	var out []violation
	for _, n := range infos {
		if n.err != nil {
			out = append(out, violation{vReplicaConverge, fmt.Sprintf("%s (%s) does not answer: %v", n.pod, n.ip, n.err)})
			continue
		}
		s, _, ok := names.ShardAndOrdinal(n.pod)
		if !ok {
			out = append(out, violation{vReplicaConverge, "a pod of no shard: " + n.pod})
			continue
		}
		byShard[s] = append(byShard[s], n)
	}
	if len(out) > 0 {
		return out
	}
	for s, sh := range vc.Status.Shards {
		var primary *nodeInfo
		var masters []string
		for i, n := range byShard[s] {
			if n.role == "master" {
				masters = append(masters, n.pod)
				if n.pod == sh.Primary {
					primary = &byShard[s][i]
				}
			}
		}
		if len(masters) != 1 || primary == nil {
			out = append(out, violation{vOnePrimary, fmt.Sprintf("shard %d: primaries %v, status names %s", s, masters, sh.Primary)})
			continue
		}
		for _, n := range byShard[s] {
			if n.pod == primary.pod {
				continue
			}
			if n.masterHost != primary.ip || !n.linkUp || n.offset != primary.offset {
				out = append(out, violation{vReplicaConverge, fmt.Sprintf("shard %d: %s follows %q (link up %v) at offset %d, the primary %s (%s) is at %d", s, n.pod, n.masterHost, n.linkUp, n.offset, primary.pod, primary.ip, primary.offset)})
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return []violation{{vReplicaConverge, err.Error()}}
	}
	cmd := exec.Command("valkey-cli", "--no-auth-warning", "--cluster", "check", net.JoinHostPort(infos[0].ip, "6379"))
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+pass)
	text, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(text), "[OK] All nodes agree about slots configuration.") ||
		!strings.Contains(string(text), "[OK] All 16384 slots covered.") || strings.Contains(string(text), "[WARNING]") || strings.Contains(string(text), "[ERR]") {
		return []violation{{vClusterCheck, fmt.Sprintf("valkey-cli --cluster check: %v\n%s", err, text)}}
	}
	return nil
}

// keyPrefix is what the schedule's keys start with: in cluster mode the hash tag of its slot.
func (h *harness) keyPrefix(vc *v1alpha1.ValkeyCluster) string {
	if sharded(vc) {
		return "{" + h.tag + "}"
	}
	return ""
}

// probeShards writes one key to the primary serving its slot (probeWrite for a Cluster
// topology).
func (h *harness) probeShards(vc *v1alpha1.ValkeyCluster, pass string) error {
	addr, err := h.ownerOf(vc, probeSlot)
	if err != nil {
		return err
	}
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		return fmt.Errorf("the primary of slot %d: %w", probeSlot, err)
	}
	defer func() { _ = c.Close() }()
	_, err = c.Do(2*time.Second, "SET", "chaos:probe", "1")
	return err
}
