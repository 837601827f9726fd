package machine

import (
	"crypto/sha256"
	"encoding/json"
	"time"
)

// JournaledObservation is an observation that caused no transition, as a journal keeps it for
// replays: a decision that changed nothing is a decision too, and a replay with other settings
// (more detection probes, another fence bound) needs the observations between transitions to
// show a transition taken earlier or later than it was.
type JournaledObservation struct {
	// Seq is the sequence number of the persisted state the observation was decided on (the
	// last transition before it).
	Seq uint64 `json:"seq"`
	// Time is the observation's time (Observation.Time, also when Observation is nil).
	Time time.Time `json:"time"`
	// Observation is the whole observation; nil when it equals the one journaled just before
	// it for the cluster (a transition's or a JournaledObservation's) apart from its time: it
	// is that one again, taken at Time.
	Observation *Observation `json:"observation,omitempty"`
}

// Fingerprint identifies an observation apart from its time: two observations with the same
// fingerprint differ at most in Time, so a journal stores the second as a repeat of the first
// (a JournaledObservation with a nil Observation). It is a hash of the observation's JSON, the
// form the journal stores it in. ok is false if the observation cannot be marshalled (it is
// plain data, so it always can): such an observation equals none and is stored whole.
func Fingerprint(obs Observation) (sum [sha256.Size]byte, ok bool) {
	obs.Time = time.Time{}
	data, err := json.Marshal(obs)
	if err != nil {
		return sum, false
	}
	return sha256.Sum256(data), true
}
