package election

// Containment is one claim the election model makes about whose data contains whose: the
// node running Holder (a run ID) holds either all of the data of the node running Of, or,
// when Of is empty, history ID up to offset Through (inclusive: every write the history's
// primary took at an offset up to Through). Elections, the deposed checks and the scale-down
// checks all rest on such claims, so a simulator that knows what every node really holds can
// check each one (machine/sim's oracle). Estimate marks a claim that rests on key counts (an
// unmeasured node, or a link a key-count election recorded): a weaker claim, not a measured
// one.
type Containment struct {
	Holder   string
	Of       string
	ID       string
	Through  int64
	Estimate bool
}

// Note records a claim when the lineage collects them and the holder is a node (not a place
// the record names).
func (l Lineage) Note(c Containment) {
	if l.claims != nil && c.Holder != "" {
		*l.claims = append(*l.claims, c)
	}
}
