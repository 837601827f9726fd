package operatorsuite

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A rolling restart and a deleted primary's pod in the Sentinel topology, under an application
// writing through valkey-go's Sentinel client with WAIT 1. The rollout restarts the replicas
// one at a time, then hands the primary over through a sentinel (roll-hand-over, a planned
// FailingOver) and restarts it last; deleting the primary's pod hands it over through a sentinel
// while the preStop hook holds it (primary-leaving). Each shows in history as the planned
// hand-over the sentinels carried out, not a failover, and no acknowledged write is lost.
func TestSentinelTopologyRollsAndHandsOverADeletedPrimary(t *testing.T) {
	for _, image := range []string{"valkey/valkey:8.0", "valkey/valkey:9.1"} {
		t.Run(image, func(t *testing.T) { sentinelRollAndLeave(t, image) })
	}
}

func sentinelRollAndLeave(t *testing.T, image string) {
	ns, steady, pass := steadySentinels(t, image)
	ctx := ctxFor(t, 8*time.Minute)
	app := sentinelClient(t, ns, pass)
	if err := setAndWait(ctx, app, "before-", 100, 1); err != nil {
		t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
	}

	// The rollout: databases takes effect only at start, so the pods are rolled.
	seq := len(steady.Status.History)
	before := dataPodUIDs(t, steady)
	w := startSentinelWriter(ctx, app)
	vc := get(t, ns, "watched")
	vc.Spec.Config = map[string]v1alpha1.ConfigValue{"databases": "32"}
	update(t, ctx, vc)
	rolled := waitFor(t, ns, "watched", 5*time.Minute, "every data pod rolled and Steady", func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(3)(vc) {
			return false
		}
		for pod, uid := range dataPodUIDs(t, vc) {
			if before[pod] == uid {
				return false
			}
		}
		return true
	})
	keys, gap := w.stop()
	handedOver := plannedHandOvers(t, rolled, seq, "roll-hand-over", "is rolled")
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged during the rollout")
	}
	readBack(t, ctx, app, keys, rolled)
	t.Logf("rollout: %s -> %s through the sentinels; %d writes acknowledged, longest gap %s", steady.Status.Primary, handedOver, len(keys), gap.Round(time.Millisecond))

	// The primary's pod deleted: handed over before it stops.
	seq = len(rolled.Status.History)
	w = startSentinelWriter(ctx, app)
	time.Sleep(time.Second)
	if err := cl.DeletePod(ctx, ns, rolled.Status.Primary); err != nil {
		t.Fatal(err)
	}
	left := waitFor(t, ns, "watched", 3*time.Minute, "Steady with 3 ready and another primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(3)(vc) && vc.Status.Primary != rolled.Status.Primary && len(vc.Status.History) > seq
	})
	time.Sleep(2 * time.Second)
	keys, gap = w.stop()
	handedOver = plannedHandOvers(t, left, seq, "primary-leaving", "pod stops")
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged while the primary's pod was deleted")
	}
	readBack(t, ctx, app, keys, left)
	everyNodeHolds(t, ns, pass, "before-", 100)
	t.Logf("deleted pod: %s -> %s through the sentinels; %d writes acknowledged, longest gap %s", rolled.Status.Primary, handedOver, len(keys), gap.Round(time.Millisecond))
}

// plannedHandOvers checks the history from seq on: the hand-over started by event and the
// sentinels' pick recorded as it (sentinel-promoted naming what), no failover the sentinels
// decided on their own and no primary lost. It returns the primary the hand-over went to.
func plannedHandOvers(t *testing.T, vc *v1alpha1.ValkeyCluster, seq int, event, what string) string {
	t.Helper()
	started, to := false, ""
	var events []string
	for _, h := range vc.Status.History[min(seq, len(vc.Status.History)):] {
		events = append(events, h.Event)
		switch h.Event {
		case event:
			started = true
		case "sentinel-promoted":
			if strings.Contains(h.Message, what) && !strings.Contains(h.Message, "chose it over") {
				to = vc.Status.Primary
			}
		case "sentinel-failover", "primary-lost", "sentinel-take-over":
			t.Errorf("a failover, not a planned hand-over: %s %s", h.Event, h.Message)
		}
	}
	if !started || to == "" {
		t.Fatalf("no %s recorded as the sentinels' pick in the history: %v\n%s", event, events, summary(vc))
	}
	return to
}

// dataPodUIDs maps every data pod status lists to its UID.
func dataPodUIDs(t *testing.T, vc *v1alpha1.ValkeyCluster) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, n := range vc.Status.Nodes {
		var pod corev1.Pod
		if err := k.Get(ctxFor(t, 10*time.Second), types.NamespacedName{Namespace: vc.Namespace, Name: n.Pod}, &pod); err != nil {
			t.Fatal(err)
		}
		out[n.Pod] = pod.UID
	}
	return out
}

// Scaling the Sentinel topology's replicas under a WAIT writer: up to four pods (the sentinels
// find the new replica through the primary, and it is opened once it has caught up), then, with
// the primary moved to the highest ordinal, down to two: the primary hands over through a
// sentinel to a pod that stays (scale-down-hand-over) before the objects shrink. No
// acknowledged write is lost, every node that stays holds the earlier keys, and the sentinels
// forget the removed pods' addresses.
func TestSentinelTopologyScalesReplicasThroughTheSentinels(t *testing.T) {
	ns, steady, pass := steadySentinels(t, "valkey/valkey:8.0")
	ctx := ctxFor(t, 8*time.Minute)
	app := sentinelClient(t, ns, pass)
	if err := setAndWait(ctx, app, "before-", 100, 1); err != nil {
		t.Fatalf("writing through the sentinels: %v\n%s", err, summary(get(t, ns, "watched")))
	}
	w := startSentinelWriter(ctx, app)
	vc := get(t, ns, "watched")
	vc.Spec.Replicas = 4
	update(t, ctx, vc)
	up := waitFor(t, ns, "watched", 3*time.Minute, "Steady with 4 ready", steadyWith(4))
	awaitSentinels(t, sentinelIPs(t, ns, "watched", 3), pass, 90*time.Second, func(m map[string]string) error {
		if m["num-slaves"] != "3" {
			return fmt.Errorf("knows %s replicas, want 3", m["num-slaves"])
		}
		return nil
	})

	// The primary onto ordinal 3, which the scale-down to two pods removes.
	annotate(t, ctx, ns, "watched", v1beta1.AnnotationSwitchoverTo, "watched-3")
	waitFor(t, ns, "watched", 2*time.Minute, "watched-3 the primary", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(4)(vc) && vc.Status.Primary == "watched-3" && vc.Annotations[v1beta1.AnnotationSwitchoverTo] == ""
	})
	seq := len(get(t, ns, "watched").Status.History)
	vc = get(t, ns, "watched")
	vc.Spec.Replicas = 2
	update(t, ctx, vc)
	down := waitFor(t, ns, "watched", 3*time.Minute, "Steady with 2 ready on ordinals 0 and 1", func(vc *v1alpha1.ValkeyCluster) bool {
		return steadyWith(2)(vc) && (vc.Status.Primary == "watched-0" || vc.Status.Primary == "watched-1")
	})
	time.Sleep(2 * time.Second)
	keys, gap := w.stop()
	to := plannedHandOvers(t, down, seq, "scale-down-hand-over", "for the scale-down")
	if len(keys) == 0 {
		t.Fatal("no write was acknowledged while scaling")
	}
	readBack(t, ctx, app, keys, down)
	everyNodeHolds(t, ns, pass, "before-", 100)
	// The removed pods' addresses are forgotten (SENTINEL RESET, one sentinel at a time):
	// every sentinel counts the one replica left.
	awaitSentinels(t, sentinelIPs(t, ns, "watched", 3), pass, 90*time.Second, func(m map[string]string) error {
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
			return fmt.Errorf("knows %s replicas and %s other sentinels, want 1 and 2", m["num-slaves"], m["num-other-sentinels"])
		}
		return nil
	})
	t.Logf("scaled %d -> 4 -> 2 pods; the scale-down handed watched-3 over to %s; %d writes acknowledged, longest gap %s (primary at first %s, %d nodes at the top)",
		len(steady.Status.Nodes), to, len(keys), gap.Round(time.Millisecond), steady.Status.Primary, len(up.Status.Nodes))
}
