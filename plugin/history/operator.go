package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

const (
	// DefaultOperatorNamespace is where the Helm chart installs the operator.
	DefaultOperatorNamespace = "valkey-operator-system"
	// DefaultOperatorPort is the operator's HTTP port serving the journal.
	DefaultOperatorPort = 8082
	// OperatorSelector selects the operator's pods.
	OperatorSelector = "app.kubernetes.io/name=valkey-operator"
	// LeaseName is the operator's leader election Lease (LeaderElectionID in
	// operator/manager), in the operator's namespace.
	LeaseName = "valkey-operator.valkey.fsm.dev"
)

// OperatorOptions say where the operator's journal endpoint is.
type OperatorOptions struct {
	// URL, when set, is the only place tried.
	URL string
	// Namespace and Port locate the operator's pods otherwise.
	Namespace string
	Port      int
}

// dialTimeout bounds each connection attempt: a pod IP that is not routable from this
// machine hangs rather than refuses, and the error should come quickly and say why.
var dialTimeout = 3 * time.Second

// requestTimeout bounds a whole request, reading a long journal included.
const requestTimeout = 60 * time.Second

// httpClient talks to the operator. Pod IPs are dialled without the environment's proxy,
// which could not reach them; an explicit URL honours it.
func httpClient(useProxy bool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout}).DialContext
	if !useProxy {
		t.Proxy = nil
	}
	return &http.Client{Transport: t, Timeout: requestTimeout}
}

// endpoint is one place the journal may be served.
type endpoint struct {
	// what describes it in errors: "pod NAME" or "pod NAME (leader)".
	what string
	pod  string
	url  string
}

// podEndpoints are the Ready operator pods that have an IP, as journal endpoints: the
// leader's first, then the others by name (the same order on every run). Every replica
// serves its journal, but a follower's holds only what it journaled while it led: the
// leader's is the one that is up to date.
func podEndpoints(pods []corev1.Pod, port int, leader string) []endpoint {
	var ready []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(p) {
			ready = append(ready, p)
		}
	}
	slices.SortFunc(ready, func(a, b corev1.Pod) int {
		if (a.Name == leader) != (b.Name == leader) {
			if a.Name == leader {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]endpoint, len(ready))
	for i, p := range ready {
		what := "pod " + p.Name
		if p.Name == leader {
			what += " (leader)"
		}
		out[i] = endpoint{what: what, pod: p.Name, url: "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))}
	}
	return out
}

// leaderPod is the name of the pod holding the operator's leader election Lease, or "" when
// it cannot be told (no Lease, no permission to read it, another identity format): the pods
// are then tried by name. controller-runtime's identity is "<hostname>_<uuid>", and a pod's
// hostname is its name.
func leaderPod(ctx context.Context, core kubernetes.Interface, namespace string) string {
	lease, err := core.CoordinationV1().Leases(namespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	name, _, ok := strings.Cut(*lease.Spec.HolderIdentity, "_")
	if !ok {
		return ""
	}
	return name
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runFull is history --full: find the operator, read the journal, print it.
func runFull(ctx context.Context, flags *kube.Flags, op OperatorOptions, name string, w io.Writer, opts Options) error {
	namespace, err := flags.Namespace()
	if err != nil {
		return err
	}
	var core kubernetes.Interface
	if op.URL == "" {
		clients, err := flags.NewClients()
		if err != nil {
			return err
		}
		core = clients.Core
	}
	raw, j, err := readJournal(ctx, core, op, namespace, name)
	if err != nil {
		return err
	}
	return PrintJournal(w, raw, j, opts)
}

// readJournal reads the journal from --operator-url, or else from the Ready operator pods in
// turn, the leader first: the first that answers with a journal wins. A replica that never
// led while the cluster existed does not know it (404); the next one is tried. When none
// answers, the error lists every attempt and how to point the plugin at the operator.
func readJournal(ctx context.Context, core kubernetes.Interface, op OperatorOptions, namespace, name string) ([]byte, *Journal, error) {
	cluster := namespace + "/" + name
	if op.URL != "" {
		raw, j, err := fetchJournal(ctx, httpClient(true), op.URL, namespace, name)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the journal of %s from --operator-url: %w%s", cluster, err, notFoundHint(err))
		}
		return raw, j, nil
	}
	pods, err := core.CoreV1().Pods(op.Namespace).List(ctx, metav1.ListOptions{LabelSelector: OperatorSelector})
	if err != nil {
		return nil, nil, fmt.Errorf("finding the operator (pods labelled %s in namespace %s): %w; pass --operator-url to skip the search", OperatorSelector, op.Namespace, err)
	}
	endpoints := podEndpoints(pods.Items, op.Port, leaderPod(ctx, core, op.Namespace))
	if len(endpoints) == 0 {
		return nil, nil, fmt.Errorf("cannot read the journal of %s: no Ready pod with an IP is labelled %s in namespace %s (%d pods found); "+
			"use --operator-namespace if the operator runs elsewhere, or --operator-url", cluster, OperatorSelector, op.Namespace, len(pods.Items))
	}
	raw, j, err := tryEndpoints(ctx, httpClient(false), endpoints, namespace, name)
	if err != nil {
		first := endpoints[0].pod
		return nil, nil, fmt.Errorf("%w\nIf this machine cannot reach pod IPs, forward the port and pass --operator-url:\n"+
			"  kubectl port-forward -n %s pod/%s %d &\n  kubectl valkey history %s -n %s --full --operator-url http://127.0.0.1:%d",
			err, op.Namespace, first, op.Port, name, namespace, op.Port)
	}
	return raw, j, nil
}

// tryEndpoints reads the journal from each endpoint in turn until one answers with it.
func tryEndpoints(ctx context.Context, client *http.Client, endpoints []endpoint, namespace, name string) ([]byte, *Journal, error) {
	var tried []string
	var last error
	for _, ep := range endpoints {
		raw, j, err := fetchJournal(ctx, client, ep.url, namespace, name)
		if err == nil {
			return raw, j, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		tried = append(tried, fmt.Sprintf("  %s: %v", ep.what, err))
		last = err
	}
	return nil, nil, fmt.Errorf("cannot read the journal of %s/%s from the operator; tried:\n%s%s",
		namespace, name, strings.Join(tried, "\n"), notFoundHint(last))
}

// notFoundHint explains a 404: the operator answered, but has no journal for the cluster.
func notFoundHint(err error) string {
	var he *httpError
	if errors.As(err, &he) && he.code == http.StatusNotFound {
		return "\n(the operator answered but has no journal of this cluster: is the name or namespace wrong, or has it not reconciled the cluster yet?)"
	}
	return ""
}
