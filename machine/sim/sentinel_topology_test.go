package sim

import (
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// The Sentinel topology explored: the sentinels decide its failovers, the machine records them
// and keeps its fences, and it elects a primary only in a failover it took over because no
// sentinel could make it. Its safety properties hold in every schedule; losses Sentinel's
// rules cause (a partitioned primary's writes, a replica promoted without the newest writes)
// are counted apart, and the open liveness findings (docs/development/sentinel-topology.md) do
// not fail this test.
func TestSentinelTopologyKeepsTheWorldsSafetyProperties(t *testing.T) {
	topo := OpenTopologies["sentinel"]
	var total Stats
	recorded, readmitted, takenOver := 0, 0, 0
	for seed := int64(1); seed <= 150; seed++ {
		schedule := Generate(RandSource{rand.New(rand.NewSource(seed))}, topo, 200)
		res := Run(topo, schedule, Options{})
		for _, v := range res.Violations {
			if v.Kind != ViolationLiveness {
				t.Fatalf("seed %d: %s\nreproduce: go run ./plugin simulate -topology sentinel -seed %d -schedules 1 -steps 200", seed, v, seed)
			}
		}
		total.SentinelLostWrites += res.Stats.SentinelLostWrites
		total.SentinelOverlapTicks += res.Stats.SentinelOverlapTicks
		took, elected := 0, ""
		for e, n := range res.Stats.Edges {
			switch {
			case strings.Contains(e, string(machine.EventSentinelPromoted)):
				recorded += n
			case strings.Contains(e, string(machine.EventPrimaryReadmitted)):
				readmitted += n
			case strings.Contains(e, string(machine.EventSentinelTakeOver)):
				took += n
			case strings.HasPrefix(e, "Steady --"+string(machine.EventPrimaryLost)):
				t.Fatalf("seed %d: the machine took %s in the Sentinel topology", seed, e)
			case strings.Contains(e, string(machine.EventPrimaryLost)) || strings.Contains(e, string(machine.EventCandidateElected)):
				elected = e
			}
		}
		if elected != "" && took == 0 {
			t.Fatalf("seed %d: the machine took %s in the Sentinel topology without taking a failover over", seed, elected)
		}
		takenOver += took
	}
	if recorded == 0 || readmitted == 0 || takenOver == 0 {
		t.Fatalf("150 schedules recorded %d failovers of the sentinels, re-admitted %d primaries and took %d failovers over: the exploration no longer reaches them", recorded, readmitted, takenOver)
	}
	t.Logf("recorded %d Sentinel failovers, re-admitted %d primaries, took %d failovers over; Sentinel's own losses: %d WAIT-acknowledged writes, %d ticks of two primaries",
		recorded, readmitted, takenOver, total.SentinelLostWrites, total.SentinelOverlapTicks)
}

// Losses are counted as Sentinel's only where Sentinel's choice made them: nodes that start
// unfenced (the sabotage no-start-fence) let a node that restarted empty feed its replicas
// when the sentinels make it a primary, and the checks still call that a violation.
func TestSentinelTopologyStillCatchesTheProductsLosses(t *testing.T) {
	topo := OpenTopologies["sentinel"]
	for seed := int64(1); seed <= 100; seed++ {
		schedule := Generate(RandSource{rand.New(rand.NewSource(seed))}, topo, 200)
		for _, v := range Run(topo, schedule, Options{Sabotage: SabotageNoStartFence}).Violations {
			if v.Kind == ViolationEmptySource || v.Kind == ViolationLostWrite {
				return
			}
		}
	}
	t.Fatal("100 schedules with nodes starting unfenced lost no write the checks saw: Sentinel's share hides the product's")
}

// A node that restarted empty is not the sentinels' pick once their INFO shows it: its
// replica-priority is 0 while its replication user is off (as the actuators keep it), so the
// failover aborts with no replica to promote rather than promote it, and the primary is kept
// when it comes back. No write is lost and the schedule ends Steady.
func TestSentinelTopologyDoesNotPickARestartedNode(t *testing.T) {
	trace := sentinelScheduleTrace(t, "testdata/sentinel/restarted-node-not-picked.sched")
	if strings.Contains(trace, "+promoted-slave") {
		t.Fatalf("the sentinels promoted a node:\n%s", trace)
	}
	traceShows(t, trace, "-failover-abort-no-good-slave", "--sentinel-kept-primary--> Steady")
}

// A node the sentinels promote after it restarted empty (before their INFO showed its
// replica-priority 0) stays closed while a node holds data it lacks, and no write is lost. The
// sentinels cannot finish that failover (the machine never opens their pick), so twice
// failover-timeout after the lost primary was recorded the machine takes it over (the pick
// holds no data, so nothing but the recorded history is left to weigh): the group is removed
// from every sentinel, a node holding the data is elected, and the sentinels are told it. The
// schedule ends Steady.
func TestSentinelTopologyKeepsAnEmptyPickClosed(t *testing.T) {
	trace := sentinelScheduleTrace(t, "testdata/sentinel/fenced-pick-lacks-data.sched")
	traceShows(t, trace, "came up fenced", "FailingOver --sentinel-take-over--> FailingOver", "--failover-complete--> Steady", "sentinel-monitor sentinel-0")
}

// A sentinel re-created with a new id leaves its old id among the others' voters; the
// operator resets each of them, one at a time, and not the renewed one, and the cluster
// settles with no write lost.
func TestSentinelTopologyResetsARenewedSentinelsOldID(t *testing.T) {
	trace := sentinelScheduleTrace(t, "testdata/sentinel/renewed-sentinel-reset.sched")
	traceShows(t, trace, "from a template, replacing sentinel03", "operator: sentinel-reset sentinel-0", "operator: sentinel-reset sentinel-1", "settled in Steady")
	if strings.Contains(trace, "sentinel-reset sentinel-2") {
		t.Fatalf("the renewed sentinel, which never knew the old id, was reset:\n%s", trace)
	}
}

// sentinelScheduleTrace replays a schedule file, fails on a violation and returns the trace.
func sentinelScheduleTrace(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res := runSchedule(t, f)
	trace := strings.Join(res.Trace, "\n")
	if len(res.Violations) > 0 {
		t.Fatalf("%s\n%s", res.Violations[0], trace)
	}
	return trace
}

// traceShows fails unless the trace shows every one of want.
func traceShows(t *testing.T, trace string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(trace, w) {
			t.Fatalf("the run never shows %q:\n%s", w, trace)
		}
	}
}

// The sentinels go from three to five and back, one at a time: each new one is told the group
// once the others know each other, and those left after a removal are reset so that they
// forget the removed one as a voter; the cluster settles with no write lost and no failover.
func TestSentinelTopologyScalesItsSentinelsOneAtATime(t *testing.T) {
	trace := sentinelScheduleTrace(t, "testdata/sentinel/sentinels-scaled.sched")
	traceShows(t, trace, "ensure-objects shards=1 replicas=2 revision=r1 sentinels=4", "sentinel-3 starts", "sentinel-monitor sentinel-3",
		"sentinel-4 starts", "sentinel-monitor sentinel-4", "sentinel-4 (sentinel05) removed", "sentinel-3 (sentinel04) removed", "settled in Steady")
	// One at a time: the fifth starts only once the fourth monitors the group and every
	// sentinel knows it; the third sentinel goes only once those left forgot the fourth.
	inOrder(t, trace, "sentinel-3 starts", "operator: sentinel-monitor sentinel-3", "sentinel-4 starts", "sentinel-4 (sentinel05) removed",
		"operator: sentinel-reset sentinel-3", "sentinel-3 (sentinel04) removed")
	if resets := strings.Count(trace, "operator: sentinel-reset"); resets != 4+3 {
		t.Fatalf("%d resets; want 4 after the first removal and 3 after the second:\n%s", resets, trace)
	}
	if strings.Contains(trace, "FailingOver") {
		t.Fatalf("scaling the sentinels failed the primary over:\n%s", trace)
	}
}

// inOrder fails unless the trace shows each of want after the one before it.
func inOrder(t *testing.T, trace string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(trace[at:], w)
		if i < 0 {
			t.Fatalf("%q not found after %d bytes of the trace, or out of order:\n%s", w, at, trace)
		}
		at += i + len(w)
	}
}

// A changed template reaches the sentinels one at a time, after the data pods' rollout: each
// restart waits until the one before has come back from its file and every sentinel is
// settled; a restarted sentinel keeps its id and what it knew, so none is reset and no
// failover follows.
func TestSentinelTopologyRollsItsSentinelsOneAtATime(t *testing.T) {
	trace := sentinelScheduleTrace(t, "testdata/sentinel/sentinels-rolled.sched")
	traceShows(t, trace, "sentinel-revision=s2", "every pod runs revision r2", "settled in Steady")
	inOrder(t, trace, "every pod runs revision r2",
		"operator: roll-sentinel sentinel-0 to s2", "sentinel01 +process epoch 0 started at",
		"operator: roll-sentinel sentinel-1 to s2", "sentinel02 +process epoch 0 started at",
		"operator: roll-sentinel sentinel-2 to s2", "sentinel03 +process epoch 0 started at")
	if n := strings.Count(trace, "operator: roll-sentinel"); n != 3 {
		t.Fatalf("%d sentinel restarts; want 3, one per sentinel:\n%s", n, trace)
	}
	_, after, _ := strings.Cut(trace, "operator: roll-sentinel")
	if strings.Contains(after, "sentinel-reset") || strings.Contains(after, "FailingOver") {
		t.Fatalf("a restarted sentinel keeps its id and its view, yet the sentinels were reset or failed over after the first restart:\n%s", trace)
	}
}
