package machine

// Target is the one Valkey process an action is aimed at: a node of a shard, and the run id
// the decision saw it run. Actions aimed at a process embed it (so a.Node, a.RunID read as
// before); an actuator refuses the action when the node runs another process by then (see
// Aimed), because the decision was about the process that is gone.
type Target struct {
	Shard int
	Node  string
	RunID string
}

// TargetOf is node n of shard s as the decision sees it.
func TargetOf(s int, n *Node) Target {
	return Target{Shard: s, Node: n.Name, RunID: n.Valkey.RunID}
}

// Aimed is an action aimed at one process: the actuators check its Target once, before
// carrying out any of them.
type Aimed interface {
	Action
	Aim() Target
}

// Aim is the process the action is aimed at.
func (t Target) Aim() Target { return t }
