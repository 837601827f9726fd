package machine

// Clone returns a copy of p that shares no memory with it: what a JSON round trip through the
// Kubernetes API gives back (nil slices stay nil, empty ones empty), without the encoding. The
// simulator stores every persisted state this way, and guards change their copy of the record
// freely. A field that holds a slice, a map or a pointer must be copied here:
// TestCloneIsTheJSONRoundTrip fails on one that is not.
func (p Persisted) Clone() Persisted {
	if p.Shards != nil {
		shards := make([]ShardRecord, len(p.Shards))
		copy(shards, p.Shards)
		for i := range shards {
			if d := shards[i].Deposed; d != nil {
				shards[i].Deposed = make([]DeposedPod, len(d))
				copy(shards[i].Deposed, d)
			}
		}
		p.Shards = shards
	}
	return p
}
