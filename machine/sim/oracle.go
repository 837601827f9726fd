package sim

import "github.com/valkey-fsm/valkey-operator/machine"

// The oracle checks the election model against the world's ground truth. Every decision the
// operator takes may rest on claims that one node's data contains another's, or a history up
// to a point (machine.Containment); the machine reasons about them from replication IDs,
// offsets and its record, never from the data. The world knows the data: each node's writes
// (log and has) and, for every client write, the history and offset at which a primary took
// it. So every measured claim is checked here: the holder must hold every write of the other
// node, or every write its history took up to the claimed offset. Claims that rest on key
// counts are estimates the machine itself flags as such (an overwrite adds no key): they are
// counted, not checked.

// place is where a primary took a client write: its history and the offset after it.
type place struct {
	offset int64
	write  int32
}

// oracle is the world's record for the oracle: where each client write was taken, by history,
// in the order taken (offsets grow within a history, one writer per history).
type oracle struct {
	off    bool
	places map[string][]place
}

// placeWrite records that primary n took client write id (just appended to its log).
func (w *World) placeWrite(n *node, id int32) {
	if w.oracle.off {
		return
	}
	if w.oracle.places == nil {
		w.oracle.places = map[string][]place{}
	}
	w.oracle.places[n.replID] = append(w.oracle.places[n.replID], place{offset: n.offset(), write: id})
}

// checkContainments checks the claims the machine made deciding on the observation just taken
// (the world has not moved since) against what the nodes hold.
func (w *World) checkContainments(claims []machine.Containment) {
	if len(claims) == 0 {
		return
	}
	seen := make(map[machine.Containment]bool, len(claims))
	for _, c := range claims {
		if seen[c] {
			continue
		}
		seen[c] = true
		if c.Estimate {
			w.stats.Estimates++
			continue
		}
		holder := w.byRunID(c.Holder)
		if holder == nil {
			continue
		}
		w.stats.Claims++
		if c.Of != "" {
			o := w.byRunID(c.Of)
			if o == nil {
				continue
			}
			for _, id := range o.log {
				if !holder.has.get(id) {
					w.violate(ViolationContainment, "the election model holds that %s's data contains %s's, but %s lacks write %d (key %d, accepted by %s at t=%d) that %s holds",
						holder.name, o.name, holder.name, id, w.writes[id].key, w.writes[id].node, w.writes[id].tick, o.name)
					break
				}
			}
			continue
		}
		for _, p := range w.oracle.places[c.ID] {
			if p.offset > c.Through {
				break
			}
			if !holder.has.get(p.write) {
				w.violate(ViolationContainment, "the election model holds that %s's data contains history %s up to offset %d, but %s lacks write %d (key %d), taken at offset %d of it by %s at t=%d",
					holder.name, c.ID, c.Through, holder.name, p.write, w.writes[p.write].key, p.offset, w.writes[p.write].node, w.writes[p.write].tick)
				break
			}
		}
	}
}

// byRunID is the node running process runID, or nil.
func (w *World) byRunID(runID string) *node {
	for _, n := range w.nodes {
		if n.runID == runID {
			return n
		}
	}
	return nil
}
