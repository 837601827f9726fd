package history

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
)

// The operator serves its journal as an aggregated API: the API server authenticates the
// user, checks their RBAC (get journals.journal.valkey.fsm.dev in the cluster's namespace)
// and proxies the request to the operator. The plugin therefore needs nothing but the
// user's kubeconfig: no port-forward, no pod IPs, no credentials of its own.
const (
	JournalGroup    = "journal.valkey.fsm.dev"
	JournalVersion  = "v1alpha1"
	JournalResource = "journals"
	// journalPageSize is how many records one request asks for (the operator answers at
	// most 1000).
	journalPageSize = 500
	// maxJournalRecords bounds what is read: a journal is unbounded, a terminal is not.
	maxJournalRecords = 1_000_000
)

// journalPath is the API path of a cluster's journal.
func journalPath(namespace, name string) string {
	return "/apis/" + JournalGroup + "/" + JournalVersion + "/namespaces/" + url.PathEscape(namespace) + "/" + JournalResource + "/" + url.PathEscape(name)
}

// journalPage is one answer of the operator. Records stay raw as well, so that -o json and
// yaml keep fields this plugin does not know.
type journalPage struct {
	Metadata struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Cluster string            `json:"cluster"`
	Records []json.RawMessage `json:"records"`
}

// journalOf reads cluster name's journal through the API server: the raw pages and the parsed
// journal.
func journalOf(ctx context.Context, flags *kube.Flags, name string) ([]byte, *Journal, error) {
	namespace, err := flags.Namespace()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := flags.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return readJournal(ctx, cs.Discovery().RESTClient(), namespace, name)
}

// runFull is history --full: read the journal through the API server, print it.
func runFull(ctx context.Context, flags *kube.Flags, name string, w io.Writer, opts Options) error {
	raw, j, err := journalOf(ctx, flags, name)
	if err != nil {
		return err
	}
	return PrintJournal(w, raw, j, opts)
}

// readJournal reads every page of a cluster's journal and returns the whole journal, also as
// JSON for -o json and yaml.
func readJournal(ctx context.Context, rc rest.Interface, namespace, name string) ([]byte, *Journal, error) {
	var all journalPage
	var last uint64
	for pages := 0; ; pages++ {
		// With the observations that caused no transition: --replay needs them, the table
		// counts them, -o json keeps them (an export that replays).
		req := rc.Get().AbsPath(journalPath(namespace, name)).Param("limit", strconv.Itoa(journalPageSize)).Param("observations", "true")
		if last != 0 {
			req = req.Param("continue", strconv.FormatUint(last, 10))
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return nil, nil, journalError(err, namespace, name, body)
		}
		var page journalPage
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, nil, fmt.Errorf("the journal of %s/%s: not a journal page: %w", namespace, name, err)
		}
		all.Cluster = page.Cluster
		all.Records = append(all.Records, page.Records...)
		if page.Metadata.Continue == "" {
			break
		}
		// A page starts where the last one said, always further on: anything else would
		// never end.
		next, err := strconv.ParseUint(page.Metadata.Continue, 10, 64)
		if err != nil || next <= last || len(page.Records) == 0 {
			return nil, nil, fmt.Errorf("the journal of %s/%s: the operator's page %d says continue at %q after %d: not further on", namespace, name, pages+1, page.Metadata.Continue, last)
		}
		if len(all.Records) > maxJournalRecords {
			return nil, nil, fmt.Errorf("the journal of %s/%s holds more than %d records: read it in pages with kubectl get --raw '%s?limit=1000&continue=SEQ'", namespace, name, maxJournalRecords, journalPath(namespace, name))
		}
		last = next
	}
	raw, err := json.Marshal(map[string]any{"cluster": all.Cluster, "records": all.Records})
	if err != nil {
		return nil, nil, err
	}
	var j Journal
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, nil, fmt.Errorf("the journal of %s/%s: %w", namespace, name, err)
	}
	return raw, &j, nil
}

// journalError says what the API server's answer means for the user.
func journalError(err error, namespace, name string, body []byte) error {
	cluster := namespace + "/" + name
	// The API server's (or the operator's) Status says it best; the error's type says what it
	// means.
	msg := err.Error()
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		msg = status.Message
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("reading the journal of %s: %s\nAsk for a Role with get on %s.%s in namespace %s (the chart's ClusterRole valkey-operator-journal-reader, bound with a RoleBinding)", cluster, msg, JournalResource, JournalGroup, namespace)
	case apierrors.IsNotFound(err) && json.Valid(body):
		// A Status from the operator (the API server's own 404 for a path it does not serve
		// is plain text).
		return fmt.Errorf("the operator has no journal of %s: it never ran that cluster, or its journal is disabled", cluster)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("reading the journal of %s: %s\nThe journal API is not installed (the operator's chart registers it as an APIService), or the operator is not running", cluster, msg)
	case apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("reading the journal of %s: %s\nThe API server cannot reach the operator: kubectl get apiservice v1alpha1.%s says why", cluster, msg, JournalGroup)
	}
	return fmt.Errorf("reading the journal of %s: %s", cluster, msg)
}

// ReadJournal reads a cluster's whole journal through the API server, as history --full
// does, for the verbs that keep it (report): the document as received and its records.
func ReadJournal(ctx context.Context, cs kubernetes.Interface, namespace, name string) ([]byte, *Journal, error) {
	return readJournal(ctx, cs.Discovery().RESTClient(), namespace, name)
}
