package valkey

import (
	"strconv"

	vk "github.com/valkey-io/valkey-go"
)

// In the Sentinel topology a node's replica-priority follows its replication user: 0 (never
// promoted by Sentinel) while the user is off, DefaultReplicaPriority while it is on. The
// user is off on a node that started (the pod's start-up fence), that the operator fenced, or
// that follows the primary without having been opened as a sync source yet: a node the
// operator does not know to hold the data, which Sentinel must not pick. Every action that
// turns the user on or off sets the priority in the same round trip; the simulator's sentinels
// read the priority the same way (machine/sim, replicaPriority).

// DefaultReplicaPriority is Valkey's default replica-priority.
const DefaultReplicaPriority = 100

// SetSentinelTopology says whether the pool's cluster runs the Sentinel topology, so that the
// actions set replica-priority with the replication user.
func (p *Pool) SetSentinelTopology(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sentinel = on
}

func (p *Pool) sentinelTopology() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sentinel
}

// replicationUser is first, then the commands that turn the replication user on or off, with
// the replica-priority that goes with it in the Sentinel topology.
func (p *Pool) replicationUser(c vk.Client, on bool, first ...vk.Completed) []vk.Completed {
	cmds := append(first, setUser(c, UserReplication, on))
	if p.sentinelTopology() {
		priority := 0
		if on {
			priority = DefaultReplicaPriority
		}
		cmds = append(cmds, c.B().ConfigSet().ParameterValue().ParameterValue("replica-priority", strconv.Itoa(priority)).Build())
	}
	return cmds
}
