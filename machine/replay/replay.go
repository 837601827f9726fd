package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// Verdict is what a replay says of one recorded decision.
type Verdict string

const (
	// Same: the machine decided as recorded.
	Same Verdict = "same"
	// Differed: it decided otherwise (a plain replay: a determinism failure; a what-if: a
	// decision the changed settings change).
	Differed Verdict = "differed"
	// NotReplayable: the journal lacks what the decision was taken on (a record journaled
	// before observations were kept, backfilled from status.history, a gap, a kind this
	// replay does not know), so it is skipped and said so.
	NotReplayable Verdict = "not replayable"
)

// Outcome is the transition a decision took; the zero Outcome is none.
type Outcome struct {
	Event   machine.Event `json:"event,omitempty"`
	From    machine.State `json:"from,omitempty"`
	To      machine.State `json:"to,omitempty"`
	Message string        `json:"message,omitempty"`
}

// None is true when the decision took no transition.
func (o Outcome) None() bool { return o.Event == "" }

func (o Outcome) String() string {
	if o.None() {
		return "no transition"
	}
	return fmt.Sprintf("%s -> %s (%s)", o.From, o.To, o.Event)
}

// sameTransition compares what matters in a what-if: the edge taken, not its wording.
func (o Outcome) sameTransition(p Outcome) bool {
	return o.Event == p.Event && o.From == p.From && o.To == p.To
}

func outcomeOf(t *machine.Transition) Outcome {
	if t == nil {
		return Outcome{}
	}
	return Outcome{Event: t.Event, From: t.From, To: t.To, Message: t.Message}
}

// Step is one recorded decision and what the replay made of it.
type Step struct {
	// Record is the index of the journal record the decision is in.
	Record int `json:"record"`
	// Kind is the record's kind.
	Kind string `json:"kind"`
	// Seq is the recorded transition's sequence number; for an observation that caused none,
	// the number of the last transition before it (the state it was decided on); for a gap,
	// its first missing number.
	Seq uint64 `json:"seq"`
	// Time is the observation's time (zero when the record has none).
	Time time.Time `json:"time"`
	// Recorded is the transition the journal recorded, Replayed the one the machine took now
	// (zero when not replayed).
	Recorded Outcome `json:"recorded"`
	Replayed Outcome `json:"replayed"`
	Verdict  Verdict `json:"verdict"`
	// Detail says what differed, or why the step is not replayable.
	Detail string `json:"detail,omitempty"`
}

// Report is the result of a replay.
type Report struct {
	Cluster string `json:"cluster"`
	// Overrides are the changed settings of a what-if replay; none for a plain replay.
	Overrides []Override `json:"overrides,omitempty"`
	Steps     []Step     `json:"steps"`
	// Same, Differed and NotReplayable count the steps of each verdict.
	Same          int `json:"same"`
	Differed      int `json:"differed"`
	NotReplayable int `json:"notReplayable"`
}

// WhatIf is true for a replay with changed settings.
func (r *Report) WhatIf() bool { return len(r.Overrides) > 0 }

// FirstDifference is the first step that differed, nil when none did.
func (r *Report) FirstDifference() *Step {
	for i := range r.Steps {
		if r.Steps[i].Verdict == Differed {
			return &r.Steps[i]
		}
	}
	return nil
}

// Timing is when a transition was taken in the record and when the what-if took it, from the
// first divergence on: the "when" of a what-if.
type Timing struct {
	Event machine.Event `json:"event"`
	// Recorded and Replayed are the times of its first occurrence from the first divergence
	// on (zero: not taken), RecordedSeq the recorded transition's number.
	Recorded    time.Time `json:"recorded"`
	Replayed    time.Time `json:"replayed"`
	RecordedSeq uint64    `json:"recordedSeq,omitempty"`
}

// Timings lists, for every transition event that took part in a divergence, when the record
// and the what-if first took it from the first divergence on; nil when nothing differed.
func (r *Report) Timings() []Timing {
	first := -1
	for i, s := range r.Steps {
		if s.Verdict == Differed {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	var out []Timing
	seen := map[machine.Event]bool{}
	for _, s := range r.Steps[first:] {
		if s.Verdict != Differed {
			continue
		}
		for _, e := range []machine.Event{s.Recorded.Event, s.Replayed.Event} {
			if e == "" || seen[e] {
				continue
			}
			seen[e] = true
			t := Timing{Event: e}
			for _, x := range r.Steps[first:] {
				if x.Recorded.Event == e && t.Recorded.IsZero() {
					t.Recorded, t.RecordedSeq = x.Time, x.Seq
				}
				if x.Replayed.Event == e && x.Verdict != NotReplayable && t.Replayed.IsZero() {
					t.Replayed = x.Time
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// decision is one decision a journal holds, in the form a replay needs.
type decision struct {
	step Step
	// obs is what the decision was taken on; nil when the journal does not have it (why in
	// step.Detail).
	obs *machine.Observation
	// before is the recorded persisted state the decision was taken on (nil: unknown), after
	// the one its transition wrote (nil: none recorded, or no transition).
	before, after *machine.Persisted
}

// decisions turns the records into decisions, resolving repeated observations and the
// persisted state each was taken on.
func decisions(records []Record) []decision {
	out := make([]decision, 0, len(records))
	// state is the persisted state the journal says was current (nil: unknown). A journal
	// starts with a new cluster's: Bootstrapping at seq 0 (one that starts later, or after a
	// gap, has an unknown state until its next transition).
	state := &machine.Persisted{State: machine.Bootstrapping}
	var last *machine.Observation
	for i := range records {
		rec := &records[i]
		d := decision{step: Step{Record: i, Kind: rec.Kind}}
		switch rec.Kind {
		case KindTransition:
			e := &rec.Entry
			d.step.Seq, d.step.Time = e.Seq, e.Time
			d.step.Recorded = Outcome{Event: e.Event, From: e.From, To: e.To, Message: e.Message}
			switch {
			case e.Observed == nil:
				d.step.Detail = "journaled before the operator kept observations"
			case state == nil || state.Seq != e.Seq-1:
				d.step.Detail = fmt.Sprintf("the state it was decided on (seq %d) is not in the journal", e.Seq-1)
				last = e.Observed
			default:
				d.obs, d.before, last = e.Observed, state, e.Observed
			}
			after := e.After.Clone()
			d.after, state = &after, &after
		case KindObservation:
			o := rec.Observed
			if o == nil {
				d.step.Detail = "an observation record without its observation"
				break
			}
			d.step.Seq, d.step.Time = o.Seq, o.Time
			obs := o.Observation
			if obs == nil && last != nil {
				again := *last
				again.Time = o.Time
				obs = &again
			} else if obs != nil {
				last = obs
			}
			switch {
			case obs == nil:
				d.step.Detail = "it repeats an observation that is no longer in the journal"
			case state == nil || state.Seq != o.Seq:
				d.step.Detail = fmt.Sprintf("the state it was decided on (seq %d) is not in the journal", o.Seq)
			default:
				d.obs, d.before = obs, state
			}
		case KindBackfilled:
			e := &rec.Entry
			d.step.Seq, d.step.Time = e.Seq, e.Time
			d.step.Recorded = Outcome{Event: e.Event, From: e.From, To: e.To, Message: e.Message}
			d.step.Detail = "copied from status.history by a leader that had not journaled it: neither its observation nor its state are known"
			state, last = nil, nil
		case KindGap:
			d.step.Seq = rec.GapFrom
			d.step.Detail = fmt.Sprintf("transitions %d-%d were not journaled", rec.GapFrom, rec.GapTo)
			state, last = nil, nil
		default:
			d.step.Seq = rec.Entry.Seq
			d.step.Detail = fmt.Sprintf("a record of kind %q, unknown to this replay", rec.Kind)
		}
		out = append(out, d)
	}
	return out
}

// Replay replays a journal. Without overrides every decision is taken again on the state the
// journal says was current and compared with the record: the transition (event, states,
// message) and the persisted state it wrote; a plain replay with a difference is a
// determinism failure. With overrides the machine runs forward on its own decisions, the
// recorded observations as the world and the changed settings applied to each one's spec,
// and every decision whose transition (event and states) differs from the recorded one is
// reported. Where the journal cannot say what a decision was taken on, the step is not
// replayable; a what-if then goes on from the next state the journal records.
func Replay(j Journal, overrides []Override) Report {
	ds := decisions(j.Records)
	rep := Report{Cluster: j.Cluster, Overrides: overrides, Steps: make([]Step, 0, len(ds))}
	if len(overrides) == 0 {
		for i := range ds {
			rep.add(plain(&ds[i]))
		}
		return rep
	}
	var mine *machine.Persisted
	for i := range ds {
		d := &ds[i]
		s := d.step
		switch {
		case d.obs == nil:
			s.Verdict = NotReplayable
			if d.after != nil {
				next := d.after.Clone()
				mine = &next
				s.Detail += "; the what-if goes on from the state it recorded"
			} else if s.Kind == KindBackfilled || s.Kind == KindGap {
				mine = nil
			}
		case mine == nil && d.before == nil:
			s.Verdict = NotReplayable
		default:
			if mine == nil {
				start := d.before.Clone()
				mine = &start
			}
			dec := machine.Decide(*mine, apply(*d.obs, overrides))
			s.Replayed = outcomeOf(dec.Transition)
			if s.Replayed.sameTransition(s.Recorded) {
				s.Verdict = Same
			} else {
				s.Verdict = Differed
				s.Detail = fmt.Sprintf("recorded %s, would have been %s", s.Recorded, s.Replayed)
				if !s.Replayed.None() && s.Replayed.Message != "" {
					s.Detail += ": " + s.Replayed.Message
				}
			}
			next := dec.Next
			mine = &next
		}
		rep.add(s)
	}
	return rep
}

// plain takes one decision again on its recorded state.
func plain(d *decision) Step {
	s := d.step
	if d.obs == nil || d.before == nil {
		s.Verdict = NotReplayable
		return s
	}
	dec := machine.Decide(*d.before, *d.obs)
	s.Replayed = outcomeOf(dec.Transition)
	switch {
	case s.Replayed != s.Recorded:
		s.Verdict = Differed
		s.Detail = fmt.Sprintf("recorded %s, replayed %s", describe(s.Recorded), describe(s.Replayed))
	case d.after != nil:
		if diff := diffPersisted(*d.after, dec.Next); diff != "" {
			s.Verdict = Differed
			s.Detail = "the same transition wrote another state: " + diff
			return s
		}
		s.Verdict = Same
	default:
		s.Verdict = Same
	}
	return s
}

func describe(o Outcome) string {
	if o.None() || o.Message == "" {
		return o.String()
	}
	return fmt.Sprintf("%s %q", o, o.Message)
}

func overridesString(overrides []Override) string {
	parts := make([]string, len(overrides))
	for i, o := range overrides {
		parts[i] = o.String()
	}
	return strings.Join(parts, ", ")
}

func (r *Report) add(s Step) {
	switch s.Verdict {
	case Same:
		r.Same++
	case Differed:
		r.Differed++
	default:
		r.NotReplayable++
	}
	r.Steps = append(r.Steps, s)
}

// diffPersisted names the fields in which two persisted states differ ("" when none), as
// their JSON (the form the journal keeps them in) shows them: a time read back from JSON and
// the same time computed now are equal, and a shard list empty or nil is the same list.
func diffPersisted(recorded, replayed machine.Persisted) string {
	a, b := canonical(recorded), canonical(replayed)
	if bytes.Equal(a, b) {
		return ""
	}
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return "they differ"
	}
	var diffs []string
	diffValues("", ma, mb, &diffs)
	sort.Strings(diffs)
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return strings.Join(diffs, "; ")
}

func canonical(p machine.Persisted) []byte {
	if len(p.Shards) == 0 {
		p.Shards = nil
	}
	data, _ := json.Marshal(p)
	return data
}

func diffValues(path string, a, b any, out *[]string) {
	ma, aok := a.(map[string]any)
	mb, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range ma {
			keys[k] = true
		}
		for k := range mb {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValues(p, ma[k], mb[k], out)
		}
		return
	}
	sa, aok := a.([]any)
	sb, bok := b.([]any)
	if aok && bok && len(sa) == len(sb) {
		for i := range sa {
			diffValues(fmt.Sprintf("%s[%d]", path, i), sa[i], sb[i], out)
		}
		return
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		*out = append(*out, fmt.Sprintf("%s recorded %s, replayed %s", path, ja, jb))
	}
}
