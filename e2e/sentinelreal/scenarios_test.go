package sentinelreal

import (
	"fmt"
	"strings"
	"testing"
)

// observed is what the sentinels and the data nodes answer at one moment, in the terms both
// sides share: data nodes and sentinels by ordinal.
type observed struct {
	sentinels []sentinelObs
	servers   []serverObs
	// promotedBy lists, per +promoted-slave event so far, the ordinal of the sentinel that
	// logged it (the failover's leader).
	promotedBy []int
}

type sentinelObs struct {
	up bool
	// master is the server GET-MASTER-ADDR-BY-NAME names (-1: none of ours).
	master      int
	configEpoch uint64
	// others is num-other-sentinels.
	others   int
	failover bool
	// quorum is SENTINEL CKQUORUM's verdict.
	quorum quorumVerdict
}

type quorumVerdict int

const (
	// quorumUnknown: the side does not answer CKQUORUM (the model leaves it out).
	quorumUnknown quorumVerdict = iota
	quorumOK
	quorumNo
)

type serverObs struct {
	up, primary bool
	// master is the server a replica follows (-1: none).
	master int
}

func (o observed) String() string {
	var b strings.Builder
	for i, s := range o.sentinels {
		fmt.Fprintf(&b, "sentinel %d: up=%v master=%d config-epoch=%d others=%d failover=%v ckquorum=%d\n", i, s.up, s.master, s.configEpoch, s.others, s.failover, s.quorum)
	}
	for i, s := range o.servers {
		fmt.Fprintf(&b, "server %d: up=%v primary=%v master=%d\n", i, s.up, s.primary, s.master)
	}
	fmt.Fprintf(&b, "promotions by sentinels %v", o.promotedBy)
	return b.String()
}

// group is one side: the model or real processes. Three servers (0 the primary, 1 and 2
// its replicas at replica-priority 10 and 20, so Sentinel's pick is server 1) and three
// sentinels with quorum 2.
type group interface {
	observe() observed
	// await waits until ok holds: by polling the processes, or by letting the model's
	// ticks pass. It fails the test with the last observation when that takes too long.
	await(t *testing.T, what string, ok func(observed) bool) observed
	killServer(t *testing.T, i int)
	// startServer starts a killed server again, without a replicaof of its own.
	startServer(t *testing.T, i int)
	// partition puts servers and sentinels on side B, everything else on side A.
	partition(t *testing.T, servers, sentinels []int)
	heal(t *testing.T)
	killSentinel(t *testing.T, i int)
	// renewSentinel re-creates sentinel i on a new address from the template: a fresh
	// config (no id) monitoring server master.
	renewSentinel(t *testing.T, i, master int)
	// sentinelFailover sends SENTINEL FAILOVER to sentinel i.
	sentinelFailover(t *testing.T, i int) error
}

// scenario is one row of the table: what is done and what both sides must end with.
type scenario struct {
	name string
	// partition: the scenario needs nftables on the real side.
	partition bool
	play      func(t *testing.T, g group)
}

// agreeOn: every running sentinel names server want with one config epoch, no failover runs.
func agreeOn(want int) func(observed) bool {
	return func(o observed) bool {
		epoch := uint64(0)
		for _, s := range o.sentinels {
			if !s.up {
				continue
			}
			if s.master != want || s.failover || (epoch != 0 && s.configEpoch != epoch) {
				return false
			}
			epoch = s.configEpoch
		}
		return epoch > 0
	}
}

// follows: server i is a replica of server master.
func follows(i, master int) func(observed) bool {
	return func(o observed) bool { s := o.servers[i]; return s.up && !s.primary && s.master == master }
}

func all(fs ...func(observed) bool) func(observed) bool {
	return func(o observed) bool {
		for _, f := range fs {
			if !f(o) {
				return false
			}
		}
		return true
	}
}

var scenarios = []scenario{
	{name: "primary-killed", play: func(t *testing.T, g group) {
		g.killServer(t, 0)
		o := g.await(t, "the sentinels fail over to server 1", all(agreeOn(1), func(o observed) bool { return o.servers[1].primary }))
		if len(o.promotedBy) != 1 {
			t.Errorf("promotions %v, want one", o.promotedBy)
		}
		epoch := o.sentinels[0].configEpoch
		g.startServer(t, 0)
		o = g.await(t, "the old primary follows the new one", all(agreeOn(1), follows(0, 1), follows(2, 1)))
		if o.sentinels[0].configEpoch != epoch || len(o.promotedBy) != 1 {
			t.Errorf("a second failover: epoch %d then %d, promotions %v", epoch, o.sentinels[0].configEpoch, o.promotedBy)
		}
	}},
	{name: "primary-with-minority-sentinel-cut-off", partition: true, play: func(t *testing.T, g group) {
		g.partition(t, []int{0}, []int{0})
		o := g.await(t, "the majority fails over to server 1", func(o observed) bool {
			s1, s2 := o.sentinels[1], o.sentinels[2]
			return s1.master == 1 && s2.master == 1 && s1.configEpoch > 0 && s1.configEpoch == s2.configEpoch && !s1.failover && !s2.failover &&
				o.servers[1].primary && follows(2, 1)(o)
		})
		if s := o.sentinels[0]; s.master != 0 || s.configEpoch != 0 {
			t.Errorf("the minority sentinel moved: %+v", s)
		}
		for _, by := range o.promotedBy {
			if by == 0 {
				t.Errorf("the minority sentinel promoted a replica")
			}
		}
		g.heal(t)
		g.await(t, "after the heal every sentinel agrees on server 1, the old primary follows it", all(agreeOn(1), follows(0, 1), follows(2, 1)))
	}},
	{name: "sentinel-renewed-from-template", play: func(t *testing.T, g group) {
		g.renewSentinel(t, 2, 0)
		g.await(t, "the others count the old id and the new one", func(o observed) bool {
			return o.sentinels[0].others == 3 && o.sentinels[1].others == 3 && o.sentinels[2].others == 2
		})
		// Two of the three sentinels that should exist remain: the survivor still counts
		// the old id, so a majority of its four voters is out of reach.
		g.killSentinel(t, 1)
		// CKQUORUM, where the side answers it, says so once sentinel 1 is found down.
		o := g.await(t, "sentinel 0 finds no majority", func(o observed) bool { return o.sentinels[0].quorum != quorumOK })
		if o.sentinels[0].others != 3 {
			t.Errorf("sentinel 0 knows %d other sentinels, want 3 (the old id and the dead one stay)", o.sentinels[0].others)
		}
	}},
	{name: "sentinel-failover", play: func(t *testing.T, g group) {
		if err := g.sentinelFailover(t, 0); err != nil {
			t.Fatal(err)
		}
		o := g.await(t, "one hand-over to server 1", all(agreeOn(1), follows(0, 1), follows(2, 1)))
		if len(o.promotedBy) != 1 || o.promotedBy[0] != 0 {
			t.Errorf("promotions by sentinels %v, want one by sentinel 0", o.promotedBy)
		}
		if e := o.sentinels[0].configEpoch; e != 1 {
			t.Errorf("config epoch %d after one hand-over, want 1", e)
		}
	}},
}
