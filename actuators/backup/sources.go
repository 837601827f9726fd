package backup

import (
	"fmt"

	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// Sources chooses where each recorded shard's snapshot is read from: a replica that follows the
// shard's recorded primary with its link up and heard from it lately (the lowest ordinal among
// them), so that the primary's clients do not share it with a full sync; the primary itself only
// when no replica qualifies. A shard with neither answering has no source: the backup fails with
// the reason rather than read a node whose data may be behind.
func Sources(obs machine.Observation, shards []machine.ShardRecord, user, password string) ([]ShardSource, error) {
	var out []ShardSource
	for s, rec := range shards {
		var prim *machine.Node
		for i := range obs.Nodes {
			if n := &obs.Nodes[i]; n.Name == rec.Primary && n.Reachable && n.Valkey.RunID == rec.RunID && n.Valkey.Role == machine.RolePrimary {
				prim = n
			}
		}
		if prim == nil {
			return nil, fmt.Errorf("shard %d: its primary %s does not answer as the recorded process", s, rec.Primary)
		}
		src := *prim
		for _, n := range obs.Nodes {
			if n.Shard == s && n.Reachable && n.Valkey.Role == machine.RoleReplica && n.Valkey.PrimaryHost == prim.Pod.IP &&
				n.Valkey.LinkUp && n.Valkey.HeardFromPrimary && (src.Name == prim.Name || n.Ordinal < src.Ordinal) {
				src = n
			}
		}
		out = append(out, ShardSource{Index: s, Node: src.Name, IP: src.Pod.IP, Slots: prim.Valkey.Slots, Primary: prim.Name, PrimaryIP: prim.Pod.IP,
			Source: Source{Addr: valkey.Addr(src.Pod.IP), User: user, Password: password}})
	}
	return out, nil
}
