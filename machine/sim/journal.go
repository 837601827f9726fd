package sim

import (
	"encoding/json"

	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

// journalDecision keeps, when the run journals its decisions (Options.Journal), what the
// operator's journal keeps of one: a transition's entry with its observation, or an
// observation that caused none, stored as a repeat (no observation) when it equals the one
// kept before it apart from its time. Observations go through JSON, as they do into the
// operator's journal, so a replay of the simulator's journal also checks that an
// observation survives being stored.
func (o *Operator) journalDecision(obs machine.Observation, d machine.Decision) {
	if !o.w.journaling {
		return
	}
	stored, err := roundTrip(obs)
	if err != nil {
		o.w.violate(ViolationMachine, "journal: the observation does not survive JSON: %v", err)
		return
	}
	fp, ok := machine.Fingerprint(stored)
	repeat := ok && o.journaledAny && fp == o.journaledFP
	o.journaledFP, o.journaledAny = fp, ok
	if e, isTransition := machine.EntryFor(d, stored); isTransition {
		o.records = append(o.records, replay.Record{Kind: replay.KindTransition, Entry: e})
		return
	}
	rec := &machine.JournaledObservation{Seq: d.Next.Seq, Time: obs.Time}
	if !repeat {
		rec.Observation = &stored
	}
	o.records = append(o.records, replay.Record{Kind: replay.KindObservation, Observed: rec})
}

func roundTrip(obs machine.Observation) (machine.Observation, error) {
	var back machine.Observation
	data, err := json.Marshal(obs)
	if err == nil {
		err = json.Unmarshal(data, &back)
	}
	return back, err
}

// Records is the journal of the current cluster object with every decision's observation, as
// the operator's journal keeps it (empty unless Options.Journal).
func (s *Sim) Records() replay.Journal {
	return replay.Journal{Cluster: "sim/" + s.w.topo.Name, Records: s.op.records}
}
