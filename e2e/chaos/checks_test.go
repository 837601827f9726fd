package chaos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/resp"
	"github.com/valkey-fsm/valkey-operator/machine"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
)

// Violation kinds: what the checks after a schedule can find.
const (
	vNoSteady        = "no-steady"         // not Steady (with every pod ready and at the current revision) within 60 s of the heal
	vOnePrimary      = "one-primary"       // not exactly one node says it is a primary, or it is not the one status names
	vReplicaConverge = "replica-converge"  // a replica does not follow the primary, is not linked, or stays behind it
	vLostWaitWrite   = "lost-wait-write"   // a WAIT-acknowledged write is gone
	vLostData        = "lost-data"         // the canary, on every node before the faults, is gone though a node never lost its data
	vReadFailed      = "read-failed"       // the writes could not be read back through the client Service
	vHistory         = "history"           // the history has a gap, does not chain, or has a transition the machine cannot take
	vConditions      = "conditions"        // not exactly one state condition True, or not the state's
	vOperatorExited  = "operator-exited"   // the operator ended on its own
	vUnexplained     = "unexplained-state" // status names a primary no transition recorded
	vClusterCheck    = "cluster-check"     // valkey-cli --cluster check does not find the cluster whole (topology Cluster)
	vSentinels       = "sentinels"         // a sentinel does not name the recorded primary, or lists other replicas or sentinels than there are (topology Sentinel)
)

type violation struct {
	Kind, Detail string
}

func (v violation) String() string { return v.Kind + ": " + v.Detail }

// maxOffsetGap is how far (bytes of the replication stream) a converged replica may be
// behind its primary when both are asked at about the same time, with no client writing:
// replication PINGs and the writes of the last moment.
const maxOffsetGap = 1024

// checkNodes compares what the nodes say with the status: exactly one primary, the one status
// names; every other node a linked replica of it, caught up.
func (h *harness) checkNodes(vc *v1alpha1.ValkeyCluster) []violation {
	if sharded(vc) {
		return h.checkShards(vc)
	}
	infos, err := h.survey(vc)
	if err != nil {
		return []violation{{vReplicaConverge, "survey: " + err.Error()}}
	}
	var out []violation
	var masters []string
	primaryIP := ""
	var primaryOffset int64
	for _, n := range infos {
		if n.err != nil {
			out = append(out, violation{vReplicaConverge, fmt.Sprintf("%s (%s) does not answer: %v", n.pod, n.ip, n.err)})
			continue
		}
		if n.role == "master" {
			masters = append(masters, n.pod)
			if n.pod == vc.Status.Primary {
				primaryIP, primaryOffset = n.ip, n.offset
			}
		}
	}
	if len(infos) != pods {
		out = append(out, violation{vReplicaConverge, fmt.Sprintf("%d pods, want %d", len(infos), pods)})
	}
	if len(masters) != 1 || masters[0] != vc.Status.Primary {
		out = append(out, violation{vOnePrimary, fmt.Sprintf("nodes answering role:master: %v; status.primary: %q", masters, vc.Status.Primary)})
	}
	if primaryIP == "" {
		return out
	}
	var replicaIPs []string
	for _, n := range infos {
		if n.err != nil || n.pod == vc.Status.Primary {
			continue
		}
		replicaIPs = append(replicaIPs, n.ip)
		switch {
		case n.role != "slave":
			// counted above when it is a master
		case n.masterHost != primaryIP:
			out = append(out, violation{vReplicaConverge, fmt.Sprintf("%s follows %s, the primary %s is at %s", n.pod, n.masterHost, vc.Status.Primary, primaryIP)})
		case !n.linkUp:
			out = append(out, violation{vReplicaConverge, fmt.Sprintf("%s: link to the primary is down", n.pod)})
		case primaryOffset-n.offset > maxOffsetGap || n.offset-primaryOffset > maxOffsetGap:
			out = append(out, violation{vReplicaConverge, fmt.Sprintf("%s at offset %d, the primary at %d", n.pod, n.offset, primaryOffset)})
		}
	}
	if h.sentinel && len(out) == 0 {
		out = h.checkSentinels(vc, primaryIP, replicaIPs)
	}
	return out
}

// checkConditions: exactly one state condition is True, the state's.
func checkConditions(vc *v1alpha1.ValkeyCluster) []violation {
	states := map[string]bool{}
	for _, s := range []v1alpha1.State{v1alpha1.StateBootstrapping, v1alpha1.StateSteady, v1alpha1.StateFailingOver, v1alpha1.StateRolling, v1alpha1.StateResharding, v1alpha1.StateRestoring} {
		states[string(s)] = true
	}
	var trues []string
	for _, c := range vc.Status.Conditions {
		if states[c.Type] && c.Status == "True" {
			trues = append(trues, c.Type)
		}
	}
	if len(trues) != 1 || trues[0] != string(vc.Status.State) {
		return []violation{{vConditions, fmt.Sprintf("state %s, True state conditions %v", vc.Status.State, trues)}}
	}
	return nil
}

// record is one transition as the journal or status.history has it.
type record struct {
	seq             uint64
	from, to, event string
	primary         string // the recorded primary after it (journal only)
	hasPrimary      bool
	source          string
}

func (r record) String() string {
	return fmt.Sprintf("#%d %s -> %s (%s) [%s]", r.seq, r.from, r.to, r.event, r.source)
}

// fetchJournal reads the running operator's journal of the cluster, every page, as the API
// server's front proxy would for the cluster's admin.
func (h *harness) fetchJournal(name string) ([]journal.Record, error) {
	addr := h.op.journalAddr()
	if addr == "" {
		return nil, fmt.Errorf("the operator is not running")
	}
	var all []journal.Record
	cont := ""
	for {
		path := "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/" + h.ns + "/journals/" + name
		if cont != "" {
			path += "?continue=" + cont
		}
		code, body, err := cl.GetAsFrontProxy(addr, path, "localcluster-admin", "system:masters")
		if err != nil {
			return nil, err
		}
		if code != http.StatusOK {
			return nil, fmt.Errorf("GET journal: %d %s", code, body)
		}
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Records []journal.Record `json:"records"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Records...)
		if page.Metadata.Continue == "" {
			return all, nil
		}
		cont = page.Metadata.Continue
	}
}

// checkHistory checks that the history explains every transition: the journal (every
// transition since the cluster was created) and status.history (the newest, bounded) agree
// where they overlap and together form one gap-free chain from seq 1, each record an edge of
// the machine's table (so its event one the machine can produce) whose From is the previous
// To; the chain ends in the current state, and the primary status names is the one the last
// transition recorded. It returns the chain.
func (h *harness) checkHistory(vc *v1alpha1.ValkeyCluster) ([]record, []violation) {
	recs, err := h.fetchJournal(vc.Name)
	if err != nil {
		return nil, []violation{{vHistory, "reading the journal: " + err.Error()}}
	}
	var out []violation
	bySeq := map[uint64]record{}
	var order []uint64
	for _, r := range recs {
		switch r.Kind {
		case journal.KindTransition, journal.KindBackfilled:
		default:
			out = append(out, violation{vHistory, fmt.Sprintf("journal record of kind %s (seq %d-%d)", r.Kind, r.GapFrom, r.GapTo)})
			continue
		}
		e := r.Entry
		rec := record{seq: e.Seq, from: string(e.From), to: string(e.To), event: string(e.Event), source: "journal/" + string(r.Kind)}
		if r.Kind == journal.KindTransition && len(e.After.Shards) > 0 {
			rec.primary, rec.hasPrimary = e.After.Shards[0].Primary, true
		}
		if _, dup := bySeq[e.Seq]; dup {
			out = append(out, violation{vHistory, fmt.Sprintf("journal has seq %d twice", e.Seq)})
		}
		bySeq[e.Seq] = rec
		order = append(order, e.Seq)
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			out = append(out, violation{vHistory, fmt.Sprintf("journal out of order: %d after %d", order[i], order[i-1])})
		}
	}
	for i, e := range vc.Status.History {
		if i > 0 && e.Seq != vc.Status.History[i-1].Seq+1 {
			out = append(out, violation{vHistory, fmt.Sprintf("status.history jumps from %d to %d", vc.Status.History[i-1].Seq, e.Seq)})
		}
		rec := record{seq: uint64(e.Seq), from: string(e.From), to: string(e.To), event: e.Event, source: "status"}
		if j, ok := bySeq[rec.seq]; ok {
			if j.from != rec.from || j.to != rec.to || j.event != rec.event {
				out = append(out, violation{vHistory, fmt.Sprintf("journal %v and status %v disagree", j, rec)})
			}
			continue
		}
		bySeq[rec.seq] = rec
	}
	chain := make([]record, 0, len(bySeq))
	for seq := uint64(1); seq <= uint64(len(bySeq)); seq++ {
		r, ok := bySeq[seq]
		if !ok {
			out = append(out, violation{vHistory, fmt.Sprintf("seq %d is in neither the journal nor status.history (%d records)", seq, len(bySeq))})
			break
		}
		chain = append(chain, r)
	}
	if len(chain) != len(bySeq) {
		return chain, out
	}
	for i, r := range chain {
		switch {
		case i == 0 && r.from != "" && r.from != string(v1alpha1.StateBootstrapping):
			out = append(out, violation{vHistory, fmt.Sprintf("the first transition %v does not start from Bootstrapping", r)})
		case i > 0 && r.from != chain[i-1].to:
			out = append(out, violation{vHistory, fmt.Sprintf("%v does not start where %v ended", r, chain[i-1])})
		}
		from := r.from
		if from == "" {
			from = string(v1alpha1.StateBootstrapping)
		}
		if !machine.InTable(machine.Transition{From: machine.State(from), To: machine.State(r.to), Event: machine.Event(r.event)}) {
			out = append(out, violation{vHistory, fmt.Sprintf("%v is not an edge of the machine's table", r)})
		}
	}
	if n := len(chain); n > 0 {
		last := chain[n-1]
		if last.to != string(vc.Status.State) {
			out = append(out, violation{vHistory, fmt.Sprintf("the last transition %v does not end in the current state %s", last, vc.Status.State)})
		}
		if len(vc.Status.History) > 0 && uint64(vc.Status.History[len(vc.Status.History)-1].Seq) != last.seq {
			out = append(out, violation{vHistory, fmt.Sprintf("status.history ends at %d, the journal goes on to %d", vc.Status.History[len(vc.Status.History)-1].Seq, last.seq)})
		}
		named := vc.Status.Primary
		if sharded(vc) && len(vc.Status.Shards) > 0 {
			named = vc.Status.Shards[0].Primary // status.primary is for one replication group only
		}
		if last.hasPrimary && last.primary != named {
			out = append(out, violation{vUnexplained, fmt.Sprintf("status names %q as (shard 0's) primary, the last transition %v recorded %q", named, last, last.primary)})
		}
	}
	return chain, out
}

// checkWrites reads every acknowledged write back through the client Service. A
// WAIT-acknowledged write that is gone is a violation unless, after it was acknowledged,
// faults hit two nodes and one of them lost its data: WAIT 1 promises two copies, which is
// one failure's worth (the simulator's rule: a write whose copies faults destroyed down to a
// single node lives or dies with that node). Without a data loss no number of faults excuses
// a lost write (a paused, cut or killed Durable node keeps it), and neither does a lone data
// loss (the operator must not, say, sync the replicas from a primary restarted empty). Plain
// writes may be lost in a failover (asynchronous replication): they are only counted.
func (h *harness) checkWrites(vc *v1alpha1.ValkeyCluster, w *writer, hits []nodeHit) (lostPlain, exempt int, out []violation) {
	addr, err := h.clientAddr(vc)
	if err != nil {
		return 0, 0, []violation{{vReadFailed, err.Error()}}
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return 0, 0, []violation{{vReadFailed, err.Error()}}
	}
	w.mu.Lock()
	keys := make([]string, 0, len(w.waited)+len(w.plain))
	for k := range w.waited {
		keys = append(keys, k)
	}
	for k := range w.plain {
		keys = append(keys, k)
	}
	waited := make(map[string]time.Time, len(w.waited))
	for k, v := range w.waited {
		waited[k] = v
	}
	w.mu.Unlock()
	sort.Strings(keys)
	values := map[string]any{}
	var lastErr error
	for attempt := 0; attempt < 5 && len(values) < len(keys); attempt++ {
		if attempt > 0 {
			time.Sleep(2 * time.Second)
		}
		lastErr = readKeys(addr, h.clientIP, pass, keys, values)
	}
	if len(values) < len(keys) {
		return 0, 0, []violation{{vReadFailed, fmt.Sprintf("read %d of %d keys through the client Service: %v", len(values), len(keys), lastErr)}}
	}
	var lost []string
	for _, k := range keys {
		if v, ok := values[k].(string); ok && v == k {
			continue
		}
		at, wasWaited := waited[k]
		if !wasWaited {
			lostPlain++
			continue
		}
		hitAfter, lostAfter := map[string]bool{}, false
		for _, x := range hits {
			if x.at.After(at) {
				hitAfter[x.pod] = true
				lostAfter = lostAfter || x.lost
			}
		}
		if len(hitAfter) >= 2 && lostAfter {
			exempt++
			continue
		}
		lost = append(lost, fmt.Sprintf("%s (acknowledged %s, now %v)", k, at.Format("15:04:05.000"), values[k]))
	}
	if len(lost) > 0 {
		ex := lost
		if len(ex) > 5 {
			ex = ex[:5]
		}
		out = append(out, violation{vLostWaitWrite, fmt.Sprintf("%d of %d WAIT-acknowledged writes lost, e.g. %s", len(lost), len(waited), strings.Join(ex, ", "))})
	}
	return lostPlain, exempt, out
}

// readKeys GETs keys (those not in values yet) through addr in pipelined batches.
func readKeys(addr string, from netip.Addr, pass string, keys []string, values map[string]any) error {
	c, err := resp.Dial(addr, from, "", pass, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	var todo []string
	for _, k := range keys {
		if _, ok := values[k]; !ok {
			todo = append(todo, k)
		}
	}
	for len(todo) > 0 {
		n := min(len(todo), 500)
		batch := todo[:n]
		cmds := make([][]string, n)
		for i, k := range batch {
			cmds[i] = []string{"GET", k}
		}
		replies, err := c.Pipeline(10*time.Second, cmds)
		if err != nil {
			return err
		}
		for i, r := range replies {
			if e, ok := r.(resp.Error); ok {
				return e
			}
			values[batch[i]] = r
		}
		todo = todo[n:]
	}
	return nil
}

// writeCanary writes key through the client Service and waits until every replica has it
// (WAIT 2): before the faults, the canary is on all three nodes.
func (h *harness) writeCanary(vc *v1alpha1.ValkeyCluster, key string) (time.Time, error) {
	addr, err := h.clientAddr(vc)
	if err != nil {
		return time.Time{}, err
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return time.Time{}, err
	}
	c, err := resp.Dial(addr, h.clientIP, "", pass, 2*time.Second)
	if err != nil {
		return time.Time{}, err
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Do(2*time.Second, "SET", key, key); err != nil {
		return time.Time{}, err
	}
	n, err := c.Do(8*time.Second, "WAIT", fmt.Sprint(pods-1), "5000")
	if err != nil {
		return time.Time{}, err
	}
	if got, _ := n.(int64); got < pods-1 {
		return time.Time{}, fmt.Errorf("WAIT %d answered %v", pods-1, n)
	}
	return time.Now(), nil
}

// checkCanary: the canary was on every node before the faults. A node that never lost its data
// since still had it, so the canary can only be gone if the operator made that node drop it: a
// full sync from a node that had lost its data (the simulator's empty-sync-source), or the
// election of such a node over it. Unless every node lost its data, that is a violation; this
// catches what the exemption of WAIT-acknowledged writes (two copies, one failure) cannot.
func (h *harness) checkCanary(vc *v1alpha1.ValkeyCluster, key string, at time.Time, hits []nodeHit) []violation {
	addr, err := h.clientAddr(vc)
	if err != nil {
		return []violation{{vReadFailed, err.Error()}}
	}
	pass, err := h.secret(vc, kube.KeyClientPassword)
	if err != nil {
		return []violation{{vReadFailed, err.Error()}}
	}
	values := map[string]any{}
	if err := readKeys(addr, h.clientIP, pass, []string{key}, values); err != nil {
		return []violation{{vReadFailed, "the canary: " + err.Error()}}
	}
	if v, ok := values[key].(string); ok && v == key {
		return nil
	}
	lost := map[string]bool{}
	for _, x := range hits {
		if x.lost && x.at.After(at) {
			lost[x.pod] = true
		}
	}
	var kept []string
	for i := 0; i < pods; i++ {
		if p := h.pod(vc, i); !lost[p] {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return []violation{{vLostData, fmt.Sprintf("the canary %s (on every node at %s) is gone, though %v never lost its data since: the operator made it drop the data (a full sync from a node that had lost its data, or such a node elected over it)\n%s",
		key, at.Format("15:04:05.000"), kept, summary(vc))}}
}
