package v1beta1

// ProfileDirectives returns the valkey.conf directives a profile sets, as name to the
// argument text written after the name (so `save ""` turns snapshots off). The operator
// renders them and spec.config may not override them (they are in OperatorOwnedDirectives).
//
// Cache evicts least recently used keys and writes nothing to disk. Durable refuses writes
// when memory is full and keeps both an append-only file (every write, fsynced every second
// unless config sets appendfsync) and RDB snapshots on Valkey's default schedule, which make
// restarts and full resyncs fast.
func ProfileDirectives(p Profile) map[string]string {
	switch p {
	case ProfileCache:
		return map[string]string{
			"maxmemory-policy": "allkeys-lru",
			"appendonly":       "no",
			"save":             `""`,
		}
	case ProfileDurable:
		return map[string]string{
			"maxmemory-policy": "noeviction",
			"appendonly":       "yes",
			"save":             "3600 1 300 100 60 10000",
		}
	}
	return nil
}
