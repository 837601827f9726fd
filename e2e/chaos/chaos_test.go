package chaos

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine/sim"
)

// Time limits of a schedule's aftermath.
const (
	// steadyWithin is how long after the heal the cluster has to settle: Steady, every pod
	// ready at the current revision, one primary, every replica linked and caught up.
	steadyWithin = 60 * time.Second
)

// TestChaos draws fault schedules with rapid and plays each against a real ValkeyCluster of
// three pods (Durable or Cache profile, drawn) while a client writes through the client
// Service. After the schedule every fault is healed and the invariants are checked; a
// violation fails the property and rapid shrinks the schedule (each attempt is a real run:
// give it time with -rapid.shrinktime and -timeout). The summary (faults by kind, schedules,
// violations) is logged at the end: run with -v to see it on success.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos against real processes takes minutes")
	}
	h := newHarness(t)
	var drawn []v1alpha1.Profile
	for _, p := range strings.Split(*profiles, ",") {
		switch v1alpha1.Profile(strings.TrimSpace(p)) {
		case v1alpha1.ProfileDurable, v1alpha1.ProfileCache:
			drawn = append(drawn, v1alpha1.Profile(strings.TrimSpace(p)))
		default:
			t.Fatalf("-chaos.profiles: unknown profile %q (Durable, Cache)", p)
		}
	}
	drawnKinds := onlyKinds(t, replicationMenu)
	h.check(t, "", 3, 5, func(rt *rapid.T, minSteps, maxSteps int) schedule {
		return scheduleGen(drawn, drawnKinds, minSteps, maxSteps).Draw(rt, "schedule")
	})
}

// check is a chaos property's frame: rapid draws schedules of minSteps to maxSteps faults (3
// to 8 with -chaos.long) and h plays each; the summary (what names the property in it) is
// logged at the end. Shrinking stays clear of the test's deadline.
func (h *harness) check(t *testing.T, what string, minSteps, maxSteps int, draw func(rt *rapid.T, minSteps, maxSteps int) schedule) {
	t.Cleanup(func() {
		s := h.stats.String()
		h.logf("summary%s:\n%s", what, s)
		t.Logf("chaos summary%s:\n%s", what, s)
	})
	if *long {
		minSteps, maxSteps = 3, 8
	}
	deadline, hasDeadline := t.Deadline()
	rapid.Check(t, func(rt *rapid.T) {
		if hasDeadline {
			defer budgetShrinking(deadline) // after this run, failed or not
		}
		h.run(rt, draw(rt, minSteps, maxSteps))
	})
}

// newHarness makes a namespace and starts an operator for one test; both go when it ends.
func newHarness(t *testing.T) *harness {
	ns := cl.Namespace(t)
	opIP, clientIP := sourceAddrs(cl)
	h := &harness{
		t: t, ns: ns, opIP: opIP, clientIP: clientIP, log: cl.Log("chaos"),
		clusters: map[string]*managed{}, stats: newStats(),
		paused: map[string]string{}, stopped: map[string]bool{},
	}
	h.op = &operatorProc{journal: filepath.Join(t.TempDir(), "journal.db"), sourceIP: opIP, log: cl.Log("operator")}
	if err := h.op.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.op.stop(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(h.heal)
	return h
}

// budgetShrinking keeps rapid's shrinking (each attempt a real run of 10 s to 2 min) from
// running into the test's deadline, which would kill the process before the local cluster
// is cleaned up: it leaves time for the two runs rapid makes after shrinking (one to write
// the fail file, one to print the shrunk schedule), each possibly after a stuck cluster had
// to be replaced. With go test's default 10 minutes that leaves no shrinking at all; give a
// long run -timeout. An explicit -rapid.shrinktime wins.
func budgetShrinking(deadline time.Time) {
	if explicitFlags["rapid.shrinktime"] {
		return
	}
	if _, env := os.LookupEnv("RAPID_SHRINKTIME"); env {
		return
	}
	const reserve = 8 * time.Minute
	budget := time.Until(deadline) - reserve
	if budget < 0 {
		budget = 0
	}
	_ = flag.Set("rapid.shrinktime", budget.String())
}

// run plays one schedule and checks the invariants after it.
func (h *harness) run(t *rapid.T, s schedule) {
	n := h.stats.beginSchedule()
	start := time.Now()
	h.t.Logf("schedule %d: %s", n, s) // the outer test's log: shown with -v, and in rapid's replay of a failure
	h.logf("==== schedule %d: %s", n, s)
	var vc *v1alpha1.ValkeyCluster
	var err error
	if h.shards > 0 {
		vc, err = h.ensureSharded(s.Profile)
		if err == nil {
			err = h.prepareShard(vc, s.Shard)
		}
	} else if h.sentinel {
		vc, err = h.ensureSentinel(s.Profile)
	} else {
		vc, err = h.ensure(s.Profile)
	}
	if err != nil {
		h.logf("setup failed: %v\n%s", err, summary(vc))
		t.Fatalf("setup: no healthy %s cluster: %v", s.Profile, err)
	}
	name := vc.Name
	primaryBefore := vc.Status.Primary
	baseSeq := lastSeq(vc)
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	addr, err := h.clientAddr(vc)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	h.mu.Lock()
	h.hits = nil
	h.mu.Unlock()
	canary := fmt.Sprintf("%scanary:s%d-%d", h.keyPrefix(vc), n, time.Now().UnixNano()%1e6)
	canaryAt, err := h.writeCanary(vc, canary)
	if err != nil {
		t.Fatalf("setup: writing the canary: %v", err)
	}
	var resolve func() (string, error)
	if sharded(vc) {
		// A cluster client's reconnection: ask a node which primary serves the slot now.
		resolve = func() (string, error) {
			now, err := h.get(name)
			if err != nil {
				return "", err
			}
			return h.slotOwner(now)
		}
	}
	if h.sentinel {
		resolve = h.sentinelResolver(name, pass)
	}
	w := startWriter(addr, h.clientIP, pass, fmt.Sprintf("%ss%d-%d", h.keyPrefix(vc), n, time.Now().UnixNano()%1e6), resolve)
	defer w.finish()
	defer h.heal() // also when a check fails half-way
	time.Sleep(time.Second)

	for i, st := range s.Steps {
		what, err := h.apply(name, s.Profile, st)
		if err != nil {
			h.stats.count(h.stats.skipped, string(st.Kind))
			h.logf("fault %d/%d %s: not played: %v", i+1, len(s.Steps), st, err)
			t.Logf("  %d. not played: %v", i+1, err)
		} else {
			h.stats.count(h.stats.faults, string(st.Kind))
			h.logf("fault %d/%d %s: %s", i+1, len(s.Steps), st, what)
			t.Logf("  %d. %s", i+1, what)
		}
		time.Sleep(time.Duration(st.After) * time.Second)
	}
	h.heal()
	if *sabotage == sabotageNoOperator {
		_ = h.op.stop()
		pod, _ := h.resolve(name, sim.NodeRef{Primary: true})
		err := cl.KillContainer(h.ns, pod, valkeyContainer)
		h.logf("sabotage: the operator is stopped for good, then SIGKILL %s: %v", pod, err)
	}
	healed := time.Now()
	h.logf("healed; waiting for Steady")

	vc, steadyAfter, vs := h.settle(name, healed, w)
	w.finish()
	writesCounted := false
	defer func() {
		if !writesCounted {
			h.stats.addWrites(w, 0, 0)
		}
	}()
	if len(vs) == 0 {
		if *sabotage == sabotageLoseWrite {
			h.loseOneWrite(vc, w)
		}
		lostPlain, exempt, wv := h.checkWrites(vc, w, h.hitsSnapshot())
		vs = append(vs, wv...)
		vs = append(vs, h.checkCanary(vc, canary, canaryAt, h.hitsSnapshot())...)
		h.stats.addWrites(w, lostPlain, exempt)
		writesCounted = true
		t.Logf("writes: %s; plain writes lost: %d; WAIT-acknowledged exempt (two nodes hit after it, one losing its data): %d", w.summary(), lostPlain, exempt)
		h.logf("writes: %s; plain writes lost: %d; exempt: %d", w.summary(), lostPlain, exempt)
	}
	if vc != nil {
		vs = append(vs, checkConditions(vc)...)
		chain, hv := h.checkHistory(vc)
		vs = append(vs, hv...)
		var since []string
		for _, r := range chain {
			if r.seq > uint64(baseSeq) {
				since = append(since, fmt.Sprintf("%s->%s(%s)", r.from, r.to, r.event))
				h.stats.count(h.stats.transitions, r.event)
			}
		}
		t.Logf("transitions: %s; primary %s -> %s", strings.Join(since, " "), primaryBefore, vc.Status.Primary)
		h.logf("transitions during the schedule: %s; primary %s -> %s", strings.Join(since, " "), primaryBefore, vc.Status.Primary)
	}
	if err := h.op.exited(); err != nil {
		vs = append(vs, violation{vOperatorExited, err.Error()})
	}
	h.stats.endSchedule(time.Since(start), steadyAfter)
	if len(vs) == 0 {
		verdict := fmt.Sprintf("schedule %d passed in %s (settled %s after the heal)", n, time.Since(start).Round(time.Second), steadyAfter.Round(100*time.Millisecond))
		h.logf("%s", verdict)
		h.t.Log(verdict)
		return
	}
	kinds := map[string]bool{}
	var lines []string
	for _, v := range vs {
		kinds[v.Kind] = true
		h.stats.count(h.stats.violations, v.Kind)
		lines = append(lines, "  "+v.String())
	}
	report := fmt.Sprintf("schedule %d: %s\nviolations:\n%s", n, s, strings.Join(lines, "\n"))
	h.stats.fail(report, len(s.Steps))
	h.logf("VIOLATIONS in %s", report)
	fmt.Fprintf(os.Stderr, "chaos: VIOLATIONS in %s\n", report)
	h.t.Logf("schedule %d failed: %s", n, strings.Join(sortedKeys(kinds), ", "))
	t.Logf("violations:\n%s", strings.Join(lines, "\n"))
	ks := sortedKeys(kinds)
	// The message names the kinds only, so that rapid recognises the same failure when it
	// replays and shrinks the schedule (details differ from run to run).
	t.Fatalf("violations: %s", strings.Join(ks, ", "))
}

// settle waits, from the heal, until the cluster has settled: the status Steady with every
// pod ready at the current revision, and the nodes agreeing with it (exactly one says it is a
// primary, the one status names; every other follows it, linked and caught up), twice in a
// row, settleGap apart, with no transition in between. The writer stops at the first
// agreement, so that the second compares offsets at rest. A fault shortly before the heal
// may not have been noticed yet when the status first reads Steady: hence the first look only
// after settleGap, and the second agreement. It returns the cluster, how long after the heal
// it first agreed, and what was still wrong when steadyWithin ran out.
func (h *harness) settle(name string, healed time.Time, w *writer) (*v1alpha1.ValkeyCluster, time.Duration, []violation) {
	const settleGap = 2 * time.Second // two of the operator's surveys
	deadline := healed.Add(steadyWithin)
	time.Sleep(settleGap)
	var (
		vc        *v1alpha1.ValkeyCluster
		last      []violation
		candidate int64 = -1
		agreed    time.Duration
	)
	for {
		var err error
		vc, err = h.get(name)
		confirmed := false
		switch {
		case err != nil:
			last = []violation{{vNoSteady, err.Error()}}
		case !steady(vc):
			last = []violation{{vNoSteady, "status is not Steady with every pod ready:\n" + summary(vc)}}
		default:
			if ok, why := h.podsAtRevision(vc); !ok {
				last = []violation{{vNoSteady, why + "\n" + summary(vc)}}
				break
			}
			if vs := h.checkNodes(vc); len(vs) > 0 {
				for i := range vs {
					vs[i].Detail += "\n" + summary(vc)
				}
				last = vs
				break
			}
			seq := lastSeq(vc)
			if candidate == seq {
				return vc, agreed, nil
			}
			if time.Now().After(deadline) {
				last = []violation{{vNoSteady, fmt.Sprintf("settled only %s after the heal", time.Since(healed).Round(100*time.Millisecond))}}
				break
			}
			candidate, agreed, confirmed = seq, time.Since(healed), true
			w.finish()
		}
		if !confirmed {
			candidate = -1
			if time.Now().After(deadline) {
				if vc != nil {
					machine, _ := json.Marshal(vc.Status.Machine)
					report := "the nodes say:\n" + h.nodesReport(vc) + "status.machine: " + string(machine) + "\n"
					for i := range last {
						last[i].Detail += report
					}
				}
				return vc, time.Since(healed), last
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		time.Sleep(settleGap)
	}
}

// lastSeq is the sequence number of the cluster's newest transition.
func lastSeq(vc *v1alpha1.ValkeyCluster) int64 {
	if h := vc.Status.History; len(h) > 0 {
		return h[len(h)-1].Seq
	}
	return 0
}

func (h *harness) hitsSnapshot() []nodeHit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nodeHit(nil), h.hits...)
}

// loseOneWrite deletes one WAIT-acknowledged key behind everyone's back (-chaos.sabotage).
func (h *harness) loseOneWrite(vc *v1alpha1.ValkeyCluster, w *writer) {
	w.mu.Lock()
	var key string
	for k := range w.waited {
		key = k
		break
	}
	w.mu.Unlock()
	addr, err := h.clientAddr(vc)
	if err != nil || key == "" {
		return
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return
	}
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }()
	_, err = c.Do(2*time.Second, "DEL", key)
	h.logf("sabotage: deleted %s: %v", key, err)
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// onlyKinds is the menu cut to -chaos.kinds (the whole menu without it).
func onlyKinds(t *testing.T, menu []sim.FaultKind) []sim.FaultKind {
	if *kinds == "" {
		return menu
	}
	var out []sim.FaultKind
	for _, k := range strings.Split(*kinds, ",") {
		k := sim.FaultKind(strings.TrimSpace(k))
		if !slices.Contains(menu, k) {
			t.Fatalf("-chaos.kinds: %q is not on the menu (%v)", k, menu)
		}
		out = append(out, k)
	}
	return out
}
