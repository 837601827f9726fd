package machine

import "github.com/valkey-fsm/valkey-operator/machine/election"

// Containment is one claim of the election model that a node's data contains another's, or
// a history up to an offset (election.Containment).
type Containment = election.Containment

// DecideClaims is Decide that also returns every containment the model asserted while
// deciding, in the order it asserted them (with repeats). The decision is Decide's.
func DecideClaims(p Persisted, obs Observation) (Decision, []Containment) {
	var claims []Containment
	d := decide(p, obs, &claims)
	return d, claims
}
