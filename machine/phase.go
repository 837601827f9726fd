package machine

// Phase is what a cluster is doing, in the words its users read (kubectl get's first column):
// the state, except that a planned hand-over of a primary reads SwitchingOver. The machine runs
// a planned hand-over (a requested switchover, a primary whose pod is leaving, a primary moved
// off an ordinal a scale-down removes) in FailingOver, because its fences and its recovery are
// a failover's; but nothing failed, and an SRE paged by FailingOver would be paged for nothing.
// The state stays the machine's input; the phase is derived from it and never read back.
type Phase string

// The phases that are not states.
const (
	// SwitchingOver: a planned hand-over of one shard's primary (FailingOver with Op.Election.Planned).
	SwitchingOver Phase = "SwitchingOver"
)

// Phases lists every phase in a fixed order: the states, with SwitchingOver after FailingOver.
func Phases() []Phase {
	var out []Phase
	for _, s := range States() {
		out = append(out, Phase(s))
		if s == FailingOver {
			out = append(out, SwitchingOver)
		}
	}
	return out
}

// Phase returns p's phase.
func (p Persisted) Phase() Phase {
	if p.State == FailingOver && p.Op.Election.Planned {
		return SwitchingOver
	}
	return Phase(p.State)
}
