package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/operator/journal"
)

// The journal is served as an aggregated API (an APIService of the chart): the API server
// authenticates the user and checks their RBAC for "get journals.journal.valkey.fsm.dev" in
// the cluster's namespace before it proxies the request here, with its front-proxy client
// certificate and the user in X-Remote-User / X-Remote-Group. So `kubectl valkey history
// --full` and `kubectl get --raw /apis/journal.valkey.fsm.dev/v1alpha1/namespaces/NS/journals/NAME`
// work with the user's own credentials and rights, wherever the API server is reachable. The
// operator trusts those headers only on a connection whose client certificate the API server's
// request-header CA signed (kube-system/extension-apiserver-authentication), and asks the API
// server once more (SubjectAccessReview) before it answers.
const (
	JournalGroup    = "journal.valkey.fsm.dev"
	JournalVersion  = "v1alpha1"
	JournalResource = "journals"
	// maxJournalPage bounds one answer: a journal is unbounded, a response is not.
	maxJournalPage = 1000
)

// JournalPage is the answer to GET .../namespaces/{namespace}/journals/{name}: up to limit
// records from seq `continue` on, oldest first, and where the next page starts; with
// `observations=true` also the observations that caused no transition (valkey-operator
// replay), a page then never ending among those that follow a transition.
type JournalPage struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        JournalPageMeta  `json:"metadata"`
	Cluster         string           `json:"cluster"`
	Records         []journal.Record `json:"records"`
}

// JournalPageMeta names the cluster and says where the next page starts ("" on the last).
type JournalPageMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Continue  string `json:"continue,omitempty"`
}

// journalServer serves the journal read-only. It is a manager Runnable: it runs on every
// replica (a follower serves what it journaled while it led).
type journalServer struct {
	addr    string
	certDir string
	j       *journal.Journal
	reader  client.Reader
	cs      kubernetes.Interface
	log     logr.Logger

	mu       sync.Mutex
	trust    *requestHeaderTrust
	trustAt  time.Time
	trustErr error
}

// requestHeaderTrust is what the API server publishes about its front proxy.
type requestHeaderTrust struct {
	cas          *x509.CertPool
	allowedNames []string
	userHeaders  []string
	groupHeaders []string
}

func (s *journalServer) Start(ctx context.Context) error {
	getCert, err := s.servingCert(ctx)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	base := "/apis/" + JournalGroup + "/" + JournalVersion
	mux.HandleFunc("GET /apis", s.discovery(s.groupList))
	mux.HandleFunc("GET /apis/"+JournalGroup, s.discovery(s.group))
	mux.HandleFunc("GET "+base, s.discovery(s.resources))
	mux.HandleFunc("GET "+base+"/namespaces/{namespace}/"+JournalResource+"/{name}", s.get)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		// Nobody holds a connection (or the file descriptors behind it) for long.
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 60 * time.Second,
		IdleTimeout:  2 * time.Minute,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: getCert,
			// The chain is checked against the request-header CA in the handler (verified
			// there, with the CA as it is now): only the API server's proxy has such a
			// certificate.
			ClientAuth: tls.RequestClientCert,
		},
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// servingCert serves tls.crt and tls.key from the certificate directory (the chart's Secret,
// whose CA the APIService names), reloaded when the files change (a Secret that is rewritten
// under a running operator), or, without a directory, a self-signed certificate made now (an
// APIService must then skip verifying it: for development only).
func (s *journalServer) servingCert(ctx context.Context) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	if s.certDir != "" {
		w, err := certwatcher.New(filepath.Join(s.certDir, "tls.crt"), filepath.Join(s.certDir, "tls.key"))
		if err != nil {
			return nil, fmt.Errorf("journal endpoint: the serving certificate in %s: %w", s.certDir, err)
		}
		go func() {
			if err := w.Start(ctx); err != nil {
				s.log.Error(err, "watching the journal's serving certificate")
			}
		}()
		return w.GetCertificate, nil
	}
	host, _, err := net.SplitHostPort(s.addr)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = append(ips, ip)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("valkey-operator-journal", ips, nil)
	if err != nil {
		return nil, err
	}
	s.log.Info("the journal endpoint serves a self-signed certificate (no --journal-cert-dir): an APIService must skip verifying it")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }, nil
}

// NeedLeaderElection is false: the journal is readable from every replica.
func (s *journalServer) NeedLeaderElection() bool { return false }

// trusted returns what the API server says about its front proxy, read from
// kube-system/extension-apiserver-authentication (the API server keeps it there) at most once
// a minute, with its own deadline: a caller that hangs up cannot make the read fail. A failed
// read keeps the last good settings, and is tried again after 5 seconds, not a minute.
func (s *journalServer) trusted() (*requestHeaderTrust, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := time.Since(s.trustAt) < time.Minute
	if s.trustErr != nil {
		fresh = time.Since(s.trustAt) < 5*time.Second
	}
	if fresh && (s.trust != nil || s.trustErr != nil) {
		if s.trust != nil {
			return s.trust, nil
		}
		return nil, s.trustErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.trustAt = time.Now()
	t, err := readRequestHeaderTrust(ctx, s.cs)
	s.trustErr = err
	if err == nil {
		s.trust = t
	} else {
		s.log.Error(err, "reading the API server's front-proxy settings")
	}
	if s.trust != nil {
		return s.trust, nil
	}
	return nil, err
}

func readRequestHeaderTrust(ctx context.Context, cs kubernetes.Interface) (*requestHeaderTrust, error) {
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the API server's front-proxy settings: %w", err)
	}
	return parseRequestHeaderTrust(cm)
}

func parseRequestHeaderTrust(cm *corev1.ConfigMap) (*requestHeaderTrust, error) {
	pemCA := cm.Data["requestheader-client-ca-file"]
	if pemCA == "" {
		return nil, errors.New("the API server has no front proxy (no requestheader-client-ca-file): aggregated APIs, the journal among them, cannot be served")
	}
	t := &requestHeaderTrust{cas: x509.NewCertPool()}
	if !t.cas.AppendCertsFromPEM([]byte(pemCA)) {
		return nil, errors.New("the API server's requestheader-client-ca-file holds no certificate")
	}
	for key, into := range map[string]*[]string{
		"requestheader-allowed-names":    &t.allowedNames,
		"requestheader-username-headers": &t.userHeaders,
		"requestheader-group-headers":    &t.groupHeaders,
	} {
		if v := cm.Data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	if len(t.userHeaders) == 0 {
		return nil, errors.New("the API server names no requestheader-username-headers")
	}
	return t, nil
}

// caller is the user the API server proxied the request for, or an error when the request
// did not come from the API server's front proxy.
func (s *journalServer) caller(req *http.Request) (user string, groups []string, status int, err error) {
	// Before anything else: a caller without a certificate costs nothing and learns nothing.
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return "", nil, http.StatusUnauthorized, errors.New("the journal is read through the API server: kubectl valkey history NAME --full, or kubectl get --raw /apis/" + JournalGroup + "/" + JournalVersion + "/namespaces/NS/journals/NAME")
	}
	t, err := s.trusted()
	if err != nil {
		return "", nil, http.StatusServiceUnavailable, errors.New("the API server's front-proxy settings cannot be read (see the operator's log)")
	}
	inter := x509.NewCertPool()
	for _, c := range req.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := req.TLS.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: t.cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return "", nil, http.StatusUnauthorized, fmt.Errorf("the client certificate is not the API server's front proxy: %w", err)
	}
	if len(t.allowedNames) > 0 && !contains(t.allowedNames, leaf.Subject.CommonName) {
		return "", nil, http.StatusUnauthorized, fmt.Errorf("the client certificate %q is not an allowed front-proxy name", leaf.Subject.CommonName)
	}
	for _, h := range t.userHeaders {
		if user = req.Header.Get(h); user != "" {
			break
		}
	}
	for _, h := range t.groupHeaders {
		for _, g := range req.Header.Values(h) {
			if g != "" {
				groups = append(groups, g)
			}
		}
	}
	return user, groups, 0, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// discovery answers the discovery documents to the API server's front proxy.
func (s *journalServer) discovery(doc func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if _, _, status, err := s.caller(req); err != nil {
			fail(w, status, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, doc())
	}
}

func (s *journalServer) groupVersion() metav1.GroupVersionForDiscovery {
	return metav1.GroupVersionForDiscovery{GroupVersion: JournalGroup + "/" + JournalVersion, Version: JournalVersion}
}

func (s *journalServer) group() any {
	return &metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     JournalGroup, Versions: []metav1.GroupVersionForDiscovery{s.groupVersion()}, PreferredVersion: s.groupVersion(),
	}
}

func (s *journalServer) groupList() any {
	return &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{*s.group().(*metav1.APIGroup)}}
}

func (s *journalServer) resources() any {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: JournalGroup + "/" + JournalVersion,
		APIResources: []metav1.APIResource{{Name: JournalResource, SingularName: "journal", Namespaced: true, Kind: "JournalPage", Verbs: metav1.Verbs{"get"}}},
	}
}

func (s *journalServer) get(w http.ResponseWriter, req *http.Request) {
	ns, name := req.PathValue("namespace"), req.PathValue("name")
	user, groups, status, err := s.caller(req)
	if err == nil && user == "" {
		status, err = http.StatusUnauthorized, errors.New("the API server's front proxy named no user")
	}
	if err != nil {
		fail(w, status, err.Error())
		return
	}
	// The API server checked the user's RBAC before proxying; asking again costs one request
	// and holds even if the aggregation layer were misconfigured to skip it.
	sar, err := s.cs.AuthorizationV1().SubjectAccessReviews().Create(req.Context(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Name: name, Verb: "get", Group: JournalGroup, Resource: JournalResource},
	}}, metav1.CreateOptions{})
	switch {
	case err != nil:
		fail(w, http.StatusServiceUnavailable, "cannot ask the API server whether "+user+" may read this journal: "+err.Error())
		return
	case !sar.Status.Allowed:
		fail(w, http.StatusForbidden, fmt.Sprintf("%s may not get %s.%s %s in namespace %s", user, JournalResource, JournalGroup, name, ns))
		return
	}
	q, err := journal.ParsePageQuery(req.URL.Query(), maxJournalPage)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	key, err := s.clusterKey(req.Context(), ns, name)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "cannot read the cluster "+ns+"/"+name+": "+err.Error())
		return
	}
	if key == "" {
		fail(w, http.StatusNotFound, "no journal for "+ns+"/"+name)
		return
	}
	recs, next, err := s.j.Page(key, q.From, q.Limit, q.Observations)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	page := JournalPage{
		TypeMeta: metav1.TypeMeta{Kind: "JournalPage", APIVersion: JournalGroup + "/" + JournalVersion},
		Metadata: JournalPageMeta{Name: name, Namespace: ns},
		Cluster:  key, Records: recs,
	}
	if next != 0 {
		page.Metadata.Continue = strconv.FormatUint(next, 10)
	}
	s.log.V(1).Info("journal read", "user", user, "cluster", key, "records", len(recs))
	writeJSON(w, http.StatusOK, page)
}

// clusterKey is the journal's name for the cluster: namespace/name/uid of the cluster as it is
// now, or, once it is deleted, of the cluster of that name whose journal was written last
// (the user's right to read is checked for the namespace and name either way).
func (s *journalServer) clusterKey(ctx context.Context, ns, name string) (string, error) {
	var vc v1beta1.ValkeyCluster
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &vc)
	if err == nil {
		return ns + "/" + name + "/" + string(vc.UID), nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	clusters, err := s.j.Clusters()
	if err != nil {
		return "", err
	}
	key, newest := "", time.Time{}
	for _, c := range clusters {
		if !strings.HasPrefix(c, ns+"/"+name+"/") {
			continue
		}
		if at := s.j.LastRecorded(c); key == "" || at.After(newest) {
			key, newest = c, at
		}
	}
	return key, nil
}

// fail answers an error as the API server does (a Status), so that clients going through it
// (kubectl, client-go) show the message.
func fail(w http.ResponseWriter, code int, msg string) {
	reason := metav1.StatusReasonUnknown
	switch code {
	case http.StatusNotFound:
		reason = metav1.StatusReasonNotFound
	case http.StatusForbidden:
		reason = metav1.StatusReasonForbidden
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusBadRequest:
		reason = metav1.StatusReasonBadRequest
	case http.StatusServiceUnavailable:
		reason = metav1.StatusReasonServiceUnavailable
	}
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
