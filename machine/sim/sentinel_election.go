package sim

import "sort"

// The failover leader's election (sentinel.c sentinelAskPrimaryStateToOtherSentinels, the
// IS-MASTER-DOWN-BY-ADDR command, sentinelVoteLeader, sentinelGetLeader). A sentinel that
// finds the master SDOWN asks every other sentinel it knows whether it finds it down too;
// once it has started a failover it asks for their vote with the same request. A sentinel
// votes once per epoch, for the first sentinel that asks in it; the leader of an epoch needs
// the votes of a majority of all the sentinels it knows (itself included) and at least
// quorum of them.

// askOthers is sentinelAskPrimaryStateToOtherSentinels: forced right after a failover
// started, else at most once per ask period per sentinel.
func (sw *SentinelWorld) askOthers(s *sentinel, forced bool) {
	now, m := sw.w.tick, s.m
	for _, p := range m.sentinels {
		// An answer older than five ask periods is forgotten, with the vote it carried.
		if !fresh(p, now) {
			p.masterDown, p.leader = false, ""
		}
		if !m.inst.sdown {
			continue
		}
		other := sw.sentinelByAddr(p.addr)
		if other == nil || other.myid != p.runID || !sw.talksToSentinel(s, other) {
			continue // no process at that address with that id: the request goes nowhere
		}
		if !forced && now-p.lastDownAskSent < sentinelAskPeriod {
			continue
		}
		p.lastDownAskSent = now
		runID := "*"
		if m.failover != failoverNone {
			runID = s.myid
		}
		down, leader, leaderEpoch := sw.isMasterDownByAddr(other, m.inst.addr, s.currentEpoch, runID)
		p.lastDownReply = now
		p.masterDown = down
		if leader != "*" {
			p.leader, p.leaderEpoch = leader, leaderEpoch
		}
	}
}

// isMasterDownByAddr is SENTINEL IS-MASTER-DOWN-BY-ADDR run on t: whether t finds the master
// at addr SDOWN, and, when runID is not "*", t's vote for the epoch.
func (sw *SentinelWorld) isMasterDownByAddr(t *sentinel, addr string, epoch uint64, runID string) (bool, string, uint64) {
	m := t.m
	if m == nil || m.inst.addr != addr {
		return false, "*", 0 // t monitors no master at that address
	}
	leader, leaderEpoch := "*", uint64(0)
	if runID != "*" {
		if v, e := sw.voteLeader(t, epoch, runID); v != "" {
			leader, leaderEpoch = v, e
		}
	}
	return m.inst.sdown, leader, leaderEpoch
}

// voteLeader is sentinelVoteLeader: t votes for runID in reqEpoch unless it voted in that
// epoch or a later one already; it answers its vote. A sentinel that votes for another waits
// before it may start a failover of its own (failover_start_time is set to now).
func (sw *SentinelWorld) voteLeader(t *sentinel, reqEpoch uint64, runID string) (string, uint64) {
	m := t.m
	if reqEpoch > t.currentEpoch {
		t.currentEpoch = reqEpoch
		sw.event(t, "+new-epoch", reqEpoch, "")
	}
	if m.leaderEpoch < reqEpoch && t.currentEpoch <= reqEpoch {
		m.leader, m.leaderEpoch = runID, t.currentEpoch
		sw.recordVote(t, m.leaderEpoch, runID)
		sw.event(t, "+vote-for-leader", m.leaderEpoch, "%s", runID)
		if runID != t.myid {
			m.failoverStart = sw.w.tick
		}
	}
	return m.leader, m.leaderEpoch
}

// getLeader is sentinelGetLeader: the sentinel that has the votes of a majority of the
// sentinels s knows (itself included) and at least quorum votes in epoch, as far as s knows
// the votes; s casts its own vote on the way (for the most voted, or itself).
func (sw *SentinelWorld) getLeader(s *sentinel, epoch uint64) (string, int) {
	m := s.m
	voters := len(m.sentinels) + 1
	counters := map[string]int{}
	for _, p := range m.sentinels {
		if p.leader != "" && p.leaderEpoch == s.currentEpoch && fresh(p, sw.w.tick) {
			counters[p.leader]++
		}
	}
	winner, most := "", 0
	for _, id := range sortedKeys(counters) {
		if counters[id] > most {
			winner, most = id, counters[id]
		}
	}
	candidate := s.myid
	if winner != "" {
		candidate = winner
	}
	if vote, voteEpoch := sw.voteLeader(s, epoch, candidate); vote != "" && voteEpoch == epoch {
		counters[vote]++
		if counters[vote] > most {
			winner, most = vote, counters[vote]
		}
	}
	if winner != "" && (most < voters/2+1 || most < s.m.set.Quorum) {
		winner = ""
	}
	return winner, most
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
