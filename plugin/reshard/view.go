package reshard

import "github.com/valkey-fsm/valkey-operator/apis/v1beta1"

// View is what reshard -o json or -o yaml prints: the plan the text shows as a table, and
// what the operator does about it.
type View struct {
	// Cluster is NAMESPACE/NAME.
	Cluster string `json:"cluster"`
	// FromShards is how many shards status lists; ToShards is the count the plan balances
	// over (spec.shards, or --shards).
	FromShards int `json:"fromShards"`
	ToShards   int `json:"toShards"`
	// SlotsMoving is how many of the 16384 slots the plan moves.
	SlotsMoving int `json:"slotsMoving"`
	// Moves are the plan's moves, one per contiguous range.
	Moves []Move `json:"moves"`
	// UnknownSlots are the shards whose slots status does not list (their primary does not
	// answer as one): the plan counts them as unassigned.
	UnknownSlots []int32 `json:"unknownSlots,omitempty"`
	// SpecShardsSet is true when this run set spec.shards to ToShards (--shards without
	// --dry-run, to a new count).
	SpecShardsSet bool `json:"specShardsSet"`
	// State, Progress and Waiting are status.state, status.progress and status.waiting.
	State    v1beta1.State `json:"state,omitempty"`
	Progress string        `json:"progress,omitempty"`
	Waiting  string        `json:"waiting,omitempty"`
}

// Move is one range of slots that moves, with its keys, from one shard to another.
type Move struct {
	// From is the shard the slots leave; -1 when no shard serves them (unassigned).
	From  int `json:"from"`
	To    int `json:"to"`
	Start int `json:"start"`
	End   int `json:"end"`
	Count int `json:"count"`
}

// viewOf is plan for vc as a View.
func viewOf(vc *v1beta1.ValkeyCluster, plan Plan, set bool) View {
	v := View{
		Cluster: vc.Namespace + "/" + vc.Name, FromShards: plan.From, ToShards: plan.To, SlotsMoving: plan.Slots(),
		Moves: []Move{}, SpecShardsSet: set,
		State: vc.Status.State, Progress: vc.Status.Progress, Waiting: vc.Status.Waiting,
	}
	for _, m := range plan.Moves {
		v.Moves = append(v.Moves, Move{From: m.From, To: m.To, Start: m.Start, End: m.End, Count: m.End - m.Start + 1})
	}
	for _, sh := range vc.Status.Shards {
		if sh.Slots == "" {
			v.UnknownSlots = append(v.UnknownSlots, sh.Index)
		}
	}
	return v
}
