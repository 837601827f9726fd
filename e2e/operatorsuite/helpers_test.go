package operatorsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/e2e/localcluster"
	"github.com/valkey-fsm/valkey-operator/machine/replay"
)

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func newCluster(ns, name string, topology v1alpha1.Topology, replicas int32) *v1alpha1.ValkeyCluster {
	return &v1alpha1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ValkeyClusterSpec{Topology: topology, Replicas: replicas},
	}
}

func get(t *testing.T, ns, name string) *v1alpha1.ValkeyCluster {
	t.Helper()
	var vc v1alpha1.ValkeyCluster
	if err := k.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
		t.Fatal(err)
	}
	return &vc
}

// waitFor polls the cluster until cond holds, failing with its status summary.
func waitFor(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*v1alpha1.ValkeyCluster) bool) *v1alpha1.ValkeyCluster {
	t.Helper()
	var last v1alpha1.ValkeyCluster
	err := wait.PollUntilContextTimeout(ctxFor(t, timeout+5*time.Second), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &last); err != nil {
			return false, nil
		}
		return cond(&last), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %s: %v\n%s\noperator's transitions and actions for the namespace:\n%s", ns, name, what, err, summary(&last), operatorTrail(ns))
	}
	return &last
}

// operatorTrail is what the operator decided and did in a namespace, from its log.
func operatorTrail(ns string) string {
	var lines []string
	for _, msg := range []string{`"msg":"transition"`, `"msg":"action done"`, `"msg":"action failed`} {
		if l := localcluster.SuiteLog(40, ns, msg); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// steadyWith is a converged cluster of n pods: Steady, the current spec observed, every pod
// ready, one primary and n-1 replicas.
func steadyWith(n int) func(*v1alpha1.ValkeyCluster) bool {
	return func(vc *v1alpha1.ValkeyCluster) bool {
		primaries, replicas := 0, 0
		for _, node := range vc.Status.Nodes {
			switch node.Role {
			case v1alpha1.NodeRolePrimary:
				primaries++
			case v1alpha1.NodeRoleReplica:
				replicas++
			}
		}
		return vc.Status.State == v1alpha1.StateSteady && vc.Status.ObservedGeneration == vc.Generation &&
			vc.Status.ReadyNodes == fmt.Sprintf("%d/%d", n, n) && vc.Status.Primary != "" &&
			len(vc.Status.Nodes) == n && primaries == 1 && replicas == n-1
	}
}

// writable waits until a write through the client Service succeeds: the machine persists
// Steady before it opens the primary for writes and the operator moves the role label.
func writable(t *testing.T, vc *v1alpha1.ValkeyCluster) vk.Client {
	t.Helper()
	addr, pass := clientServiceAddr(t, vc), password(t, vc)
	ctx := ctxFor(t, 30*time.Second)
	var last error
	for ctx.Err() == nil {
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{addr}, Password: pass, DisableCache: true, Dialer: net.Dialer{Timeout: 2 * time.Second}, ForceSingleClient: true})
		if err == nil {
			if err = c.Do(ctx, c.B().Set().Key("probe").Value("1").Build()).Error(); err == nil {
				t.Cleanup(c.Close)
				return c
			}
			c.Close()
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no write through the client Service %s within 30s: %v\n%s", addr, last, summary(vc))
	return nil
}

func summary(vc *v1alpha1.ValkeyCluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state=%s ready=%s primary=%s gen=%d observed=%d\n", vc.Status.State, vc.Status.ReadyNodes, vc.Status.Primary, vc.Generation, vc.Status.ObservedGeneration)
	for _, n := range vc.Status.Nodes {
		fmt.Fprintf(&b, "  node %s ip=%s role=%s offset=%d lag=%d ready=%v\n", n.Pod, n.IP, n.Role, n.ReplicationOffset, n.Lag, n.Ready)
	}
	for _, h := range vc.Status.History {
		fmt.Fprintf(&b, "  #%d %s -> %s %s: %s\n", h.Seq, h.From, h.To, h.Event, h.Message)
	}
	for _, c := range vc.Status.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// password is the application password the operator generated.
func password(t testing.TB, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	return secretKey(t, vc, kube.KeyClientPassword)
}

// secretKey reads one key of the cluster's auth Secret.
func secretKey(t testing.TB, vc *v1alpha1.ValkeyCluster, key string) string {
	t.Helper()
	var s corev1.Secret
	if err := k.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Auth}, &s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[key])
}

// operatorClient connects to one node as the operator's user (it works on fenced nodes too).
func operatorClient(t *testing.T, vc *v1alpha1.ValkeyCluster, ip string) vk.Client {
	t.Helper()
	c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{ip + ":6379"}, Username: "operator", Password: secretKey(t, vc, kube.KeyOperatorPassword),
		DisableCache: true, Dialer: net.Dialer{Timeout: 2 * time.Second}, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("connecting to %s: %v", ip, err)
	}
	return c
}

// appClient connects as an application does: AUTH with the client password.
func appClient(t *testing.T, addr, pass string) vk.Client {
	t.Helper()
	c, err := dialApp(addr, pass)
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

// dialApp connects to addr as the application (the default user, pass); the caller closes it.
func dialApp(addr, pass string) (vk.Client, error) {
	return vk.NewClient(vk.ClientOption{InitAddress: []string{addr}, Password: pass, DisableCache: true, Dialer: net.Dialer{Timeout: 2 * time.Second}, ForceSingleClient: true})
}

func clientServiceAddr(t *testing.T, vc *v1alpha1.ValkeyCluster) string {
	t.Helper()
	var svc corev1.Service
	if err := k.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Namespace: vc.Namespace, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Client}, &svc); err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, "6379")
}

func metav1GetOptions() metav1.GetOptions { return metav1.GetOptions{} }

// journalRecord is a record of the operator's journal endpoint, as far as the tests read it.
type journalRecord struct {
	Kind  string `json:"kind"`
	Entry struct {
		Seq   uint64
		To    string
		Event string
	} `json:"entry"`
}

// journalRecords reads a cluster's journal from an in-process operator's endpoint, as the
// API server's front proxy does (its client certificate, the user in X-Remote-User): the
// operator checks both, and asks the API server whether that user may read it.
func journalRecords(t *testing.T, op *operator, ns, name string) []journalRecord {
	t.Helper()
	code, body := journalGet(t, op.addr, "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/"+ns+"/journals/"+name, "localcluster-admin", "system:masters")
	if code != http.StatusOK {
		t.Fatalf("reading the journal of %s/%s: %d %s", ns, name, code, body)
	}
	var doc struct {
		Records []journalRecord `json:"records"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	// The endpoint gives observations only to a reader that asks (journalReplay); should it
	// give them anyway, the tests that read records count transitions.
	var out []journalRecord
	for _, r := range doc.Records {
		if r.Kind != "observation" {
			out = append(out, r)
		}
	}
	return out
}

// journalReplay reads every page of a cluster's journal from an in-process operator's
// endpoint, as `kubectl get --raw` would (the pages appended, the export format of
// kubectl valkey replay), and replays it through the machine with the overrides sets.
func journalReplay(t *testing.T, op *operator, ns, name string, sets ...string) replay.Report {
	t.Helper()
	var exported bytes.Buffer
	for next := ""; ; {
		path := "/apis/journal.valkey.fsm.dev/v1alpha1/namespaces/" + ns + "/journals/" + name + "?limit=50&observations=true"
		if next != "" {
			path += "&continue=" + next
		}
		code, body := journalGet(t, op.addr, path, "localcluster-admin", "system:masters")
		if code != http.StatusOK {
			t.Fatalf("reading the journal of %s/%s: %d %s", ns, name, code, body)
		}
		exported.Write(body)
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		if next = page.Metadata.Continue; next == "" {
			break
		}
	}
	j, err := replay.Read(&exported)
	if err != nil {
		t.Fatal(err)
	}
	overrides, err := replay.ParseOverrides(sets)
	if err != nil {
		t.Fatal(err)
	}
	return replay.Replay(j, overrides)
}

// journalGet sends GET path to the operator's journal endpoint at addr as the API server's
// front proxy would, for user (none: as anyone else), and returns the status code and body.
func journalGet(t *testing.T, addr, path, user string, groups ...string) (int, []byte) {
	t.Helper()
	code, body, err := cl.GetAsFrontProxy(addr, path, user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// checkHistoryChains fails unless status.history is gap-free (seq 1, 2, ...) and each
// transition starts where the previous one ended.
func checkHistoryChains(t *testing.T, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	for i, h := range vc.Status.History {
		if h.Seq != int64(i+1) || (i > 0 && h.From != vc.Status.History[i-1].To) {
			t.Fatalf("history has a gap, duplicate or break at %d:\n%s", i, summary(vc))
		}
	}
}

// setAndWait writes keys prefix0..prefix(n-1) and then WAITs for replicas to acknowledge them,
// all on one dedicated connection: WAIT counts the writes of its own connection (valkey-go
// would otherwise send it on another one, where it confirms nothing).
func setAndWait(ctx context.Context, c vk.Client, prefix string, n int, replicas int64) error {
	return c.Dedicated(func(dc vk.DedicatedClient) error {
		for i := 0; i < n; i++ {
			if err := dc.Do(ctx, dc.B().Set().Key(fmt.Sprintf("%s%d", prefix, i)).Value("v").Build()).Error(); err != nil {
				return err
			}
		}
		// WAIT returns as soon as enough replicas acknowledge: a long timeout costs a healthy
		// cluster nothing, and a loaded machine may delay an acknowledgement past two seconds.
		got, err := dc.Do(ctx, dc.B().Wait().Numreplicas(replicas).Timeout(10000).Build()).AsInt64()
		if err == nil && got < replicas {
			err = fmt.Errorf("WAIT %d answered %d", replicas, got)
		}
		return err
	})
}

// steadyReplication is the opening of most tests here: a namespace of its own, an operator,
// a 3-pod Replication cluster called name, Steady with every pod ready. ctx lasts for timeout.
func steadyReplication(t *testing.T, name string, timeout time.Duration) (string, context.Context, *v1alpha1.ValkeyCluster) {
	t.Helper()
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, timeout)
	if err := k.Create(ctx, newCluster(ns, name, v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	return ns, ctx, waitFor(t, ns, name, 2*time.Minute, "Steady with 3 ready", steadyWith(3))
}

// update writes vc's spec, annotations and labels as a user would: the operator writes status
// all the time, so an Update from a copy read a moment ago may conflict; on a conflict it reads
// the cluster again and writes the same change on top.
func update(t *testing.T, ctx context.Context, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := k.Update(ctx, vc)
		if apierrors.IsConflict(err) {
			spec, annotations, labels := vc.Spec, vc.Annotations, vc.Labels
			if gerr := k.Get(ctx, client.ObjectKeyFromObject(vc), vc); gerr != nil {
				return gerr
			}
			vc.Spec, vc.Annotations, vc.Labels = spec, annotations, labels
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
