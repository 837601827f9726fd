package sim

import (
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

var debugTopo = flag.String("debug.topo", "", "")
var debugSeed = flag.Int64("debug.seed", 0, "")
var debugTail = flag.Int("debug.tail", 80, "")

func TestDebug(t *testing.T) {
	if *debugTopo == "" {
		t.Skip()
	}
	topo := Topologies[*debugTopo]
	sched := Generate(RandSource{rand.New(rand.NewSource(*debugSeed))}, topo, 100)
	s := New(topo, Options{Trace: true})
	for _, st := range sched {
		s.Step(st)
	}
	s.Converge()
	lines := s.Trace()
	if len(lines) > *debugTail {
		lines = lines[len(lines)-*debugTail:]
	}
	fmt.Println(strings.Join(lines, "\n"))
	fmt.Printf("%+v\n", s.State())
	for _, n := range s.w.nodes {
		fmt.Printf("%+v\n", *n)
	}
	fmt.Println(s.Violations())
}

func TestDebugDecide(t *testing.T) {
	if *debugTopo == "" {
		t.Skip()
	}
	topo := Topologies[*debugTopo]
	sched := Generate(RandSource{rand.New(rand.NewSource(*debugSeed))}, topo, 100)
	s := New(topo, Options{Trace: true})
	for _, st := range sched {
		s.Step(st)
	}
	s.Converge()
	obs := s.w.observe(map[string]int{})
	fmt.Printf("%+v\n", obs)
}

func TestDebugJournal(t *testing.T) {
	if *debugTopo == "" {
		t.Skip()
	}
	topo := Topologies[*debugTopo]
	sched := Generate(RandSource{rand.New(rand.NewSource(*debugSeed))}, topo, 100)
	s := New(topo, Options{Trace: true})
	for _, st := range sched {
		s.Step(st)
	}
	s.Converge()
	for _, e := range s.Journal() {
		fmt.Printf("#%d %s %s->%s shards=%+v op=%+v\n", e.Seq, e.Event, e.From, e.To, e.After.Shards, e.After.Op)
		for _, n := range e.Observation.Nodes {
			fmt.Printf("     %+v\n", n)
		}
	}
}

var debugTick = flag.Int64("debug.tick", 0, "")

func TestDebugAt(t *testing.T) {
	if *debugTopo == "" {
		t.Skip()
	}
	topo := Topologies[*debugTopo]
	sched := Generate(RandSource{rand.New(rand.NewSource(*debugSeed))}, topo, 100)
	s := New(topo, Options{Trace: true})
	for _, st := range append(sched, Step{Kind: StepIdle}) {
		if s.w.tick == *debugTick {
			s.heal()
			probes := map[string]int{}
			for k, v := range s.op.probes {
				probes[k] = v
			}
			obs := s.w.observe(probes)
			for _, n := range obs.Nodes {
				fmt.Printf("%+v\n", n)
			}
			fmt.Printf("%+v\n", s.op.status.Persisted)
		}
		s.Step(st)
	}
}
