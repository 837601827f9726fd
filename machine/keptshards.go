package machine

// keptShards is how many shards a first bootstrap on kept claims wires so that every claim
// that may hold data is started (0: none beyond what the claims of the spec's shards need). A
// cluster re-created with fewer shards than the one deleted keeps the claims of the shards it no
// longer asks for, and with persistence they hold those shards' keys (a write acknowledged by
// WAIT on the highest shard). Left unstarted, the bootstrap assigns their slots to the other
// shards, empty, and the keys are lost. Started, each such shard is elected by its data like
// the others, the cluster is formed with the slots its nodes claim, and from Steady the
// ordinary resharding moves the extra shards' slots, keys and all, before they are removed: as
// a wake does with the shards that ran when the pods stopped (bootShards).
//
// A re-created cluster has no record of the shard count it ran with, so it is learnt from
// what is observed: the claims older than the cluster whose pods do not exist yet
// (Observation.ClaimsBeyond) and, once they do, the pods on volumes older than the cluster. So
// the count does not fall while the extra shards start. A restore at bootstrap replaces every
// shard's data with its snapshot's, as the user asked: no kept claim is started for it.
func (d *decider) keptShards(p Persisted) int {
	spec := d.v.spec
	if p.State != Bootstrapping || p.Op.Hibernation.Wake || spec.Mode != ModeCluster || !spec.Persistence || d.restoreAtBootstrap() != nil {
		return 0
	}
	shards := 0
	for _, c := range d.obs.ClaimsBeyond {
		shards = max(shards, c.Shard+1)
	}
	for _, n := range d.v.nodes {
		if n.Pod.VolumeFromBefore {
			shards = max(shards, n.Shard+1)
		}
	}
	return shards
}
