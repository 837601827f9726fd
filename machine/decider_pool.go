package machine

import "sync"

// Deciders are pooled: a decider holds a persisted state and an observation by value, and
// allocating one (and its view) per decision was half of what a simulated step allocated.
// Nothing a decision returns refers to a decider or its view (actions, transitions and the
// next state hold values and names, never *Node), so one can be reused as soon as the call
// that took it returns. The pool changes no result: reset overwrites every field.
var deciders = sync.Pool{New: func() any { return new(decider) }}

// takeDecider returns a decider for p and obs; give it back with release.
func takeDecider(p Persisted, obs Observation) *decider {
	d := deciders.Get().(*decider)
	d.p, d.obs, d.approved, d.claims = p, obs, "", nil
	d.view.reset(d.obs)
	d.v = &d.view
	return d
}

// release returns d to the pool, dropping what it refers to.
func (d *decider) release() {
	d.p, d.obs, d.approved, d.v, d.claims = Persisted{}, Observation{}, "", nil, nil
	d.view.clear()
	deciders.Put(d)
}
