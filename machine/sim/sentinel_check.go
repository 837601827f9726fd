package sim

import "fmt"

// Checks of the election's rules against what every sentinel did, not against what the
// deciding sentinel believes: a failover starts only when quorum sentinels found the master
// down in their own views within the ask validity (five ask periods), a sentinel votes once
// per epoch, and a leader holds the votes of a majority of the sentinels that exist and at
// least quorum of them. A violation is recorded (Violations), not raised, so that a test can
// say which rule broke.

// voteKey names one sentinel's vote in one epoch.
type voteKey struct {
	epoch uint64
	voter string
}

// recordVote notes t's vote and whether it is a second, different one in the same epoch.
func (sw *SentinelWorld) recordVote(t *sentinel, epoch uint64, candidate string) {
	if sw.votes == nil {
		sw.votes = map[voteKey]string{}
	}
	k := voteKey{epoch, t.myid}
	if prev, ok := sw.votes[k]; ok && prev != candidate {
		sw.violate("%s voted for %s and then for %s in epoch %d", t.myid, prev, candidate, epoch)
	}
	sw.votes[k] = candidate
}

// checkStart: s starts a failover on ODOWN; quorum sentinels, s included, must have found the
// master at that address SDOWN in their own views within the last five ask periods.
func (sw *SentinelWorld) checkStart(s *sentinel) {
	now, addr := sw.w.tick, s.m.inst.addr
	down := 0
	for _, t := range sw.sentinels {
		if at, ok := sw.downSeen[downKey{t.myid, addr}]; ok && now-at <= 5*sentinelAskPeriod {
			down++
		}
	}
	if down < s.m.set.Quorum {
		sw.violate("%s started a failover of %s in epoch %d with %d sentinel(s) finding it down (quorum %d)", s.myid, addr, s.m.failoverEpoch, down, s.m.set.Quorum)
	}
}

// checkElected: s found itself leader of its failover's epoch; the votes cast for it must
// be a majority of the sentinels that exist and at least quorum. A sentinel the operator added
// (a scale-up) that s has not heard of yet is not counted: it adds one voter, which s's
// majority of the others still outvotes (as a single-member change in any quorum system); a
// sentinel renewed under a new id is counted, as its old id is among the voters.
func (sw *SentinelWorld) checkElected(s *sentinel) {
	epoch := s.m.failoverEpoch
	votes := 0
	for k, c := range sw.votes {
		if k.epoch == epoch && c == s.myid {
			votes++
		}
	}
	exist := 0
	for _, t := range sw.sentinels {
		if t == s || !t.added || s.m.peer(t.myid) != nil {
			exist++
		}
	}
	if votes < exist/2+1 || votes < s.m.set.Quorum {
		sw.violate("%s elected in epoch %d with %d vote(s) of %d sentinels (quorum %d)", s.myid, epoch, votes, exist, s.m.set.Quorum)
	}
	if len(sw.elected[epoch]) > 1 {
		sw.violate("epoch %d has leaders %v", epoch, sw.elected[epoch])
	}
}

func (sw *SentinelWorld) violate(format string, args ...any) {
	v := fmt.Sprintf("t=%d ", sw.w.tick) + fmt.Sprintf(format, args...)
	sw.violations = append(sw.violations, v)
	sw.w.note("sentinel VIOLATION: %s", v)
}
