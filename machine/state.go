package machine

// State is one of the seven states of a cluster. States are CamelCase and events kebab-case
// because looplab/fsm keeps both in one namespace of strings.
type State string

// The states. Exactly one is current; its condition is the only True state condition.
const (
	// Bootstrapping: the objects and nodes are being created and wired for the first time.
	Bootstrapping State = "Bootstrapping"
	// Steady: every shard has a recorded, healthy primary; the machine only converges.
	Steady State = "Steady"
	// FailingOver: the primary of one shard is being replaced (lost, or a requested switchover).
	FailingOver State = "FailingOver"
	// Rolling: pods are restarted one at a time onto a new revision, primaries last.
	Rolling State = "Rolling"
	// Resharding: shards are added or removed and hash slots migrated (cluster mode).
	Resharding State = "Resharding"
	// Restoring: every shard is reloaded from a snapshot.
	Restoring State = "Restoring"
	// Hibernated: writes are closed and every pod stops (or has stopped); the claims keep the
	// data until a wake bootstraps the cluster on them again.
	Hibernated State = "Hibernated"
)

// States lists every state in a fixed order (the order of the generated documentation).
func States() []State {
	return []State{Bootstrapping, Steady, FailingOver, Rolling, Resharding, Restoring, Hibernated}
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	for _, known := range States() {
		if s == known {
			return true
		}
	}
	return false
}
