package machine

// Whose slots a primary's keys are, when ghosts serve slots (ghosts.go): a primary that
// serves no slots and holds keys lost its slots to a node that is no pod any more, and where
// several ghosts serve slots nobody follows, the slots its keys hash to say which ghost's
// slots are its. The survey reads them (Valkey.KeySlots) only of such a primary.

// ownerByKeySlots is the holder (a recorded primary serving no slots and holding keys) whose
// keys all hash to slots of ranges, when it is the only holder with a key there; nil when
// that is not so or a holder's key slots were not read (it may hold keys there).
func ownerByKeySlots(ranges []SlotRange, holders []*Node) *Node {
	var owner *Node
	for _, h := range holders {
		ks := h.Valkey.KeySlots
		if len(ks) == 0 {
			return nil
		}
		switch {
		case rangesWithin(ks, ranges):
			if owner != nil {
				return nil
			}
			owner = h
		case rangesMeet(ks, ranges):
			return nil // its keys are in these slots and others': not one shard's
		}
	}
	return owner
}

// rangesWithin reports whether every slot of a is in b.
func rangesWithin(a, b []SlotRange) bool {
	for _, r := range a {
		for s := r.Start; s <= r.End; s++ {
			if !slotIn(s, b) {
				return false
			}
		}
	}
	return true
}

// rangesMeet reports whether a and b share a slot.
func rangesMeet(a, b []SlotRange) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Start <= y.End && y.Start <= x.End {
				return true
			}
		}
	}
	return false
}

func slotIn(s int, rs []SlotRange) bool {
	for _, r := range rs {
		if s >= r.Start && s <= r.End {
			return true
		}
	}
	return false
}
