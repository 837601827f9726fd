package status

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/timeline"
)

// RecentTransitions is how many transitions the text output ends with; `history` shows all.
const RecentTransitions = 5

// Print writes the status of the ValkeyCluster u in format.
//
// JSON and YAML print status as the server returned it, not through the typed struct, so
// that fields this plugin does not know (a newer operator's) are not lost.
func Print(w io.Writer, u *unstructured.Unstructured, format output.Format, now func() time.Time) error {
	switch format {
	case output.JSON, output.YAML:
		st, ok := u.Object["status"]
		if !ok || st == nil {
			st = map[string]any{}
		}
		return output.Encode(w, st, format)
	}
	vc, err := kube.Typed(u)
	if err != nil {
		return err
	}
	return printText(w, vc, now())
}

func printText(w io.Writer, vc *v1beta1.ValkeyCluster, now time.Time) error {
	var b strings.Builder
	st := vc.Status

	fields := output.NewTable("", "")
	fields.Row("Name:", vc.Name)
	fields.Row("Namespace:", vc.Namespace)
	fields.Row("State:", stateLine(vc, now))
	fields.Row("Topology:", orNone(string(vc.Spec.Topology)))
	fields.Row("Profile:", orNone(string(vc.Spec.Profile)))
	fields.Row("Image:", orNone(vc.Spec.Image))
	if st.ValkeyVersion != "" {
		// What the servers report, which the image's tag need not say (a moving tag).
		fields.Row("Version:", st.ValkeyVersion)
	}
	fields.Row("Ready:", readyLine(vc))
	if vc.Spec.Topology == v1beta1.TopologyCluster {
		fields.Row("Shards:", fmt.Sprintf("%d with a primary, slots served %s", st.ShardCount, orNone(st.Slots)))
	} else {
		fields.Row("Primary:", orNone(st.Primary))
	}
	if st.Progress != "" {
		fields.Row("Progress:", st.Progress)
	}
	if st.Waiting != "" {
		fields.Row("Waiting for:", st.Waiting)
	}
	if r := st.Restore; r != nil && r.ID != "" {
		line := r.Phase + " " + r.ID
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		fields.Row("Restore:", line)
	}
	fields.Row("Generation:", generationLine(vc))
	writeFields(&b, fields)

	if warnings := Warnings(vc); len(warnings) > 0 {
		b.WriteString("\nWarnings:\n")
		for _, warning := range warnings {
			fmt.Fprintf(&b, "  %s\n", warning)
		}
	}

	b.WriteString("\nNodes:\n")
	if len(st.Nodes) == 0 {
		b.WriteString("  No node surveyed yet.\n")
	} else {
		writeTable(&b, nodesTable(st.Nodes))
	}

	if len(st.Sentinels) > 0 {
		b.WriteString("\nSentinels:\n")
		writeTable(&b, sentinelsTable(st.Sentinels))
	}

	if len(st.Shards) > 0 {
		b.WriteString("\nShards:\n")
		t := output.NewTable("SHARD", "PRIMARY", "SLOTS")
		for _, sh := range st.Shards {
			t.Row(strconv.Itoa(int(sh.Index)), orNone(sh.Primary), orNone(sh.Slots))
		}
		writeTable(&b, t)
	}

	if len(st.FailingActions) > 0 {
		b.WriteString("\nFailing actions:\n")
		writeTable(&b, failingTable(st.FailingActions, now))
	}

	b.WriteString("\nConditions:\n")
	if len(st.Conditions) == 0 {
		b.WriteString("  None yet.\n")
	} else {
		writeTable(&b, conditionsTable(st.Conditions, now))
	}

	writeRecent(&b, vc, now)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFields prints the name/value block, a table without its (empty) header.
func writeFields(b *strings.Builder, t *output.Table) {
	_, _ = t.WriteRowsTo(b)
}

func writeTable(b *strings.Builder, t *output.Table) {
	_, _ = t.WriteTo(b)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// stateLine is the state, with how long the cluster has been in it and the event that
// brought it there, taken from the state's condition (its lastTransitionTime is when the
// state was entered).
func stateLine(vc *v1beta1.ValkeyCluster, now time.Time) string {
	st := vc.Status
	if st.State == "" {
		return "<none> (the operator has not reconciled this cluster yet)"
	}
	line := string(st.State)
	if c := meta.FindStatusCondition(st.Conditions, string(st.State)); c != nil && c.Status == metav1.ConditionTrue {
		line += " for " + output.Age(now, c.LastTransitionTime.Time)
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
	}
	return line
}

// readyLine is status.readyNodes as the operator wrote it; before it has, the counts it is
// made of.
func readyLine(vc *v1beta1.ValkeyCluster) string {
	st := vc.Status
	ready := st.ReadyNodes
	if ready == "" {
		ready = fmt.Sprintf("%d/%d", st.ReadyPods, vc.Spec.PodsPerShard())
	}
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReady); c != nil {
		ready += " (Ready=" + string(c.Status) + ")"
	}
	return ready
}

// generationLine shows whether the operator has acted on the latest spec: an
// observedGeneration behind metadata.generation means a change is not handled yet.
func generationLine(vc *v1beta1.ValkeyCluster) string {
	gen, observed := vc.Generation, vc.Status.ObservedGeneration
	if observed == gen {
		return strconv.FormatInt(gen, 10)
	}
	if observed == 0 {
		return fmt.Sprintf("%d (the operator has not acted on the cluster yet)", gen)
	}
	return fmt.Sprintf("%d (the operator has acted on %d)", gen, observed)
}

// Warnings are facts in the status that an operator of the cluster should look at: broken
// invariants of the state conditions, more than one node reporting itself primary, or the
// recognised primary not reporting itself primary. They can be passing during a failover
// or a rollout; the state says whether one is running.
func Warnings(vc *v1beta1.ValkeyCluster) []string {
	st := vc.Status
	var out []string
	if st.State != "" {
		if err := v1beta1.CheckStateConditions(st.Conditions, st.State); err != nil {
			out = append(out, "state conditions: "+err.Error())
		}
	}
	// One primary per shard (a replication group is shard 0).
	primaries := map[int32][]string{}
	var shards []int32
	for _, n := range st.Nodes {
		if n.Role == v1beta1.NodeRolePrimary {
			if len(primaries[n.Shard]) == 0 {
				shards = append(shards, n.Shard)
			}
			primaries[n.Shard] = append(primaries[n.Shard], n.Pod)
		}
	}
	for _, sh := range shards {
		if p := primaries[sh]; len(p) > 1 {
			where := ""
			if vc.Spec.Topology == v1beta1.TopologyCluster {
				where = fmt.Sprintf(" of shard %d", sh)
			}
			out = append(out, fmt.Sprintf("%d nodes%s report role primary: %s", len(p), where, strings.Join(p, ", ")))
		}
	}
	if st.Primary != "" {
		for _, n := range st.Nodes {
			if n.Pod == st.Primary && n.Role != v1beta1.NodeRolePrimary {
				out = append(out, fmt.Sprintf("the recognised primary %s reports role %s", n.Pod, n.Role))
			}
		}
	}
	return out
}

func nodesTable(nodes []v1beta1.NodeStatus) *output.Table {
	t := output.NewTable("POD", "ROLE", "IP", "OFFSET", "LAG", "READY")
	// Lag is within a shard: each shard has its own primary and offsets.
	for _, n := range nodes {
		t.Row(n.Pod, string(n.Role), orNone(n.IP),
			strconv.FormatInt(n.ReplicationOffset, 10), strconv.FormatInt(n.Lag, 10), strconv.FormatBool(n.Ready))
	}
	return t
}

// failingTable lists the machine's actions that keep failing, with when they are tried next.
func failingTable(fs []v1beta1.FailingAction, now time.Time) *output.Table {
	t := output.NewTable("ACTION", "FAILURES", "NEXT TRY", "LAST ERROR")
	for _, f := range fs {
		next := "now"
		if f.RetryAt.After(now) {
			next = "in " + output.Age(f.RetryAt.Time, now)
		}
		t.Row(f.Action, strconv.Itoa(int(f.Count)), next, f.LastError)
	}
	return t
}

// conditionsTable lists Ready first, then the state conditions in the order of the states,
// then any other in alphabetical order: the same order whatever order the operator wrote
// them in.
func conditionsTable(conds []metav1.Condition, now time.Time) *output.Table {
	order := append([]string{v1beta1.ConditionReady}, v1beta1.StateConditionTypes()...)
	rank := func(typ string) int {
		if i := slices.Index(order, typ); i >= 0 {
			return i
		}
		return len(order)
	}
	sorted := slices.Clone(conds)
	slices.SortStableFunc(sorted, func(a, b metav1.Condition) int {
		if ra, rb := rank(a.Type), rank(b.Type); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Type, b.Type)
	})
	t := output.NewTable("TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
	for _, c := range sorted {
		t.Row(c.Type, string(c.Status), c.Reason, output.Age(now, c.LastTransitionTime.Time), c.Message)
	}
	return t
}

func writeRecent(b *strings.Builder, vc *v1beta1.ValkeyCluster, now time.Time) {
	h := vc.Status.History
	b.WriteString("\nLast transitions:\n")
	if len(h) == 0 {
		b.WriteString("  None yet.\n")
		return
	}
	recent := h
	if len(h) > RecentTransitions {
		recent = h[len(h)-RecentTransitions:]
	}
	t := timeline.NewTable(timeline.Options{Age: true, Now: now})
	for _, e := range recent {
		t.Add(timeline.FromHistory(e))
	}
	_, _ = t.WriteTo(b)
	if older := len(h) - len(recent); older > 0 {
		fmt.Fprintf(b, "  (%d earlier: kubectl valkey history %s -n %s)\n", older, vc.Name, vc.Namespace)
	}
}

// sentinelsTable is what each sentinel of a Sentinel topology names as the primary, under
// which config epoch, and how many other sentinels it knows.
func sentinelsTable(sentinels []v1beta1.SentinelStatus) *output.Table {
	t := output.NewTable("SENTINEL", "IP", "ANSWERS", "PRIMARY", "EPOCH", "OTHERS", "FLAGS")
	for _, s := range sentinels {
		answers, primary, epoch, others := "no", "-", "-", "-"
		if s.Answering {
			answers, primary = "yes", "(monitors none)"
		}
		if s.Monitoring {
			primary, epoch, others = s.Primary, strconv.FormatInt(s.ConfigEpoch, 10), strconv.Itoa(int(s.OtherSentinels))
		}
		var flags []string
		if s.PrimaryDown {
			flags = append(flags, "primary-down")
		}
		if s.FailingOver {
			flags = append(flags, "failing-over")
		}
		if s.Error != "" {
			flags = append(flags, s.Error)
		}
		t.Row(s.Pod, orNone(s.IP), answers, primary, epoch, others, orNone(strings.Join(flags, ",")))
	}
	return t
}
