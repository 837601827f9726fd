package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/actuators/valkey"
	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// TLS, the operator's side: every node whose pod serves TLS (its revision's kube.AnnotationTLS)
// is reached over TLS, verified against the CA of spec.tls's Secret under the pod's DNS name,
// never skipping the verification; the others in plain. The Secret is read again at most every
// tlsReread, so that a renewed CA or client certificate is picked up.

const tlsReread = 10 * time.Second

// tlsMemory keeps each cluster's last TLS configuration and when it was read.
type tlsMemory struct {
	mu sync.Mutex
	m  map[types.UID]tlsRead
}

type tlsRead struct {
	secret string
	at     time.Time
	cfg    *tls.Config
	err    error
	// leaf is the Secret's certificate as read (also when it was refused: status shows it).
	leaf *x509.Certificate
	// good is the last configuration that passed the checks: while the Secret holds one that
	// does not (expired, another CA), the nodes still serve what they loaded, and the operator
	// keeps reaching them with it rather than going blind on a running cluster.
	good *tls.Config
}

func (t *tlsMemory) Forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, uid)
}

func (t *tlsMemory) Remembers(uid types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[uid]
	return ok
}

// podDNSName is the name a pod's certificate must carry: <pod>.<headless>.<namespace>.svc.
func podDNSName(vc *v1beta1.ValkeyCluster, names kube.Names, pod string) string {
	return pod + "." + names.Headless + "." + vc.Namespace + ".svc"
}

// tlsConfig is the configuration to verify the cluster's TLS nodes with (nil when none of its
// pods serves TLS and the spec asks for none).
func (r *Reconciler) tlsConfig(ctx context.Context, vc *v1beta1.ValkeyCluster, pods map[string]*corev1.Pod) (*tls.Config, error) {
	cfg, _, err := r.tlsRead(ctx, vc, pods)
	return cfg, err
}

// tlsRead is tlsConfig with the Secret's certificate (nil when none could be parsed).
func (r *Reconciler) tlsRead(ctx context.Context, vc *v1beta1.ValkeyCluster, pods map[string]*corev1.Pod) (*tls.Config, *x509.Certificate, error) {
	needed := vc.Spec.TLS.Mode == v1beta1.TLSPlainAndTLS || vc.Spec.TLS.Mode == v1beta1.TLSOnly
	for _, p := range pods {
		needed = needed || p.Annotations[kube.AnnotationTLS] != ""
	}
	name := v1beta1.TLSSecretName(vc)
	if !needed {
		return nil, nil, nil
	}
	if name == "" {
		return nil, nil, errors.New("pods serve TLS but spec.tls.secretRef is empty: name the Secret their certificate comes from")
	}
	r.tls.mu.Lock()
	if r.tls.m == nil {
		r.tls.m = map[types.UID]tlsRead{}
	}
	last, ok := r.tls.m[vc.UID]
	r.tls.mu.Unlock()
	if ok && last.secret == name && r.now().Sub(last.at) < tlsReread {
		return orGood(last), last.leaf, last.err
	}
	cfg, leaf, err := r.readTLS(ctx, vc, name)
	read := tlsRead{secret: name, at: r.now(), cfg: cfg, err: err, leaf: leaf, good: last.good}
	if err == nil {
		read.good = cfg
	} else if read.good == nil {
		read.good = r.mountedConfig(ctx, vc, name, pods)
	}
	r.tls.mu.Lock()
	r.tls.m[vc.UID] = read
	r.tls.mu.Unlock()
	return orGood(read), leaf, err
}

// mountedConfig is the configuration of the Secret the pods that serve TLS mount, when it is
// not refused (nil otherwise). While spec.tls names a refused Secret, the pods keep the one
// they mount (tlsGate) and serve its certificate: an operator that starts then has no last
// good configuration in memory, and reaches them with this one rather than not at all.
func (r *Reconciler) mountedConfig(ctx context.Context, vc *v1beta1.ValkeyCluster, refused string, pods map[string]*corev1.Pod) *tls.Config {
	tried := map[string]bool{refused: true, "": true}
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		p := pods[name]
		mounted := kube.MountedTLSSecret(&p.Spec)
		if p.Annotations[kube.AnnotationTLS] == "" || tried[mounted] {
			continue
		}
		tried[mounted] = true
		if cfg, _, err := r.readTLS(ctx, vc, mounted); err == nil {
			return cfg
		}
	}
	return nil
}

// orGood is the configuration read, or the last good one when the read was refused.
func orGood(t tlsRead) *tls.Config {
	if t.err != nil {
		return t.good
	}
	return t.cfg
}

// readTLS reads and checks the Secret: a CA, and a certificate it signed that is valid now and
// names the cluster's pods (with the key, the operator's client certificate when nodes require
// one).
//
// The pods' name is what keeps spec.tls.secretRef from being a way to read another Secret of
// the namespace (whoever may create a ValkeyCluster chooses its image, and the image reads what
// the pods mount): the pods mount only a Secret that passed these checks, and a certificate
// made for something else does not name this cluster's pods. Nothing is lost by refusing it:
// the operator verifies every node under its pod's name, so such a certificate could never
// serve. The Secret's type is not required to be kubernetes.io/tls: a running cluster whose
// Secret of another type names its pods was made for it, and refusing it on an upgrade would
// leave the operator unable to reach nodes that serve TLS.
func (r *Reconciler) readTLS(ctx context.Context, vc *v1beta1.ValkeyCluster, name string) (*tls.Config, *x509.Certificate, error) {
	var s corev1.Secret
	if err := r.apiReader().Get(ctx, types.NamespacedName{Namespace: vc.Namespace, Name: name}, &s); err != nil {
		return nil, nil, fmt.Errorf("TLS Secret %s: %w", name, err)
	}
	var missing []string
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if len(s.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("TLS Secret %s lacks %s", name, strings.Join(missing, ", "))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		return nil, nil, fmt.Errorf("TLS Secret %s: ca.crt holds no PEM certificate", name)
	}
	pair, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		return nil, nil, fmt.Errorf("TLS Secret %s: tls.crt and tls.key: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("TLS Secret %s: tls.crt: %w", name, err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: r.now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, leaf, fmt.Errorf("TLS Secret %s: the certificate does not verify against its ca.crt now: %w", name, err)
	}
	names := kube.NamesOf(vc)
	if pod := podDNSName(vc, names, names.PodName(0, 0)); leaf.VerifyHostname(pod) != nil {
		return nil, leaf, fmt.Errorf("TLS Secret %s: the certificate does not name the cluster's pods (%s; *.%s.%s.svc names them all): it was not made for this cluster", name, pod, names.Headless, vc.Namespace)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if vc.Spec.TLS.ClientCertificates {
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, leaf, nil
}

// routeTLS tells the pool how to reach each pod, and the TLS configuration (an error: the
// Secret is refused, status says why, and the last good configuration, if any, stays in use).
func (r *Reconciler) routeTLS(ctx context.Context, vc *v1beta1.ValkeyCluster, names kube.Names, pods map[string]*corev1.Pod, pool *valkey.Pool) (*x509.Certificate, error) {
	cfg, leaf, err := r.tlsRead(ctx, vc, pods)
	pool.SetTLS(cfg)
	for name, p := range pods {
		if p.Status.PodIP == "" {
			continue
		}
		server := ""
		if p.Annotations[kube.AnnotationTLS] != "" {
			server = podDNSName(vc, names, name)
		}
		pool.Route(p.Status.PodIP, server)
	}
	return leaf, err
}

// serialOf is a certificate's serial as status and the machine show it.
func serialOf(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	return strings.ToUpper(c.SerialNumber.Text(16))
}

// infoOf describes a certificate for status.
func infoOf(c *x509.Certificate) v1beta1.CertificateInfo {
	t := metav1.NewTime(c.NotAfter)
	return v1beta1.CertificateInfo{Subject: c.Subject.String(), Issuer: c.Issuer.String(), Serial: serialOf(c), DNSNames: c.DNSNames, NotAfter: &t}
}

// observeCertificates asks every answering node that serves TLS, over a fresh handshake,
// which certificate it serves (the machine's CertificateSerial; status.tls), and gives the
// machine the Secret's serial when the operator accepted it.
func observeCertificates(ctx context.Context, w *world) {
	if w.tlsLeaf != nil && w.tlsErr == nil {
		w.obs.Spec.Certificate = serialOf(w.tlsLeaf)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range w.obs.Nodes {
		n := &w.obs.Nodes[i]
		if !n.Reachable || n.Pod.IP == "" || w.pods[n.Name] == nil || w.pods[n.Name].Annotations[kube.AnnotationTLS] == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, w.interval)
			defer cancel()
			cert, err := w.pool.ServedCertificate(cctx, n.Pod.IP)
			mu.Lock()
			defer mu.Unlock()
			nc := v1beta1.NodeCertificate{Pod: n.Name}
			if err != nil {
				nc.Error = err.Error()
			} else {
				n.Valkey.CertificateSerial = serialOf(cert)
				nc.CertificateInfo = infoOf(cert)
				nc.MatchesSecret = w.tlsLeaf != nil && serialOf(cert) == serialOf(w.tlsLeaf) && cert.Issuer.String() == w.tlsLeaf.Issuer.String()
			}
			w.nodeCerts = append(w.nodeCerts, nc)
		}()
	}
	wg.Wait()
	sort.Slice(w.nodeCerts, func(i, j int) bool { return w.nodeCerts[i].Pod < w.nodeCerts[j].Pod })
}

// tlsStatus is status.tls (nil when the cluster has nothing of TLS to show).
func tlsStatus(w *world) *v1beta1.TLSStatus {
	if w.tlsLeaf == nil && w.tlsErr == nil && len(w.nodeCerts) == 0 && w.certificate == nil {
		return nil
	}
	st := &v1beta1.TLSStatus{Nodes: w.nodeCerts, Certificate: w.certificate}
	if w.tlsLeaf != nil {
		info := infoOf(w.tlsLeaf)
		st.Secret = &info
	}
	if w.tlsErr != nil {
		st.Refused = w.tlsErr.Error()
	}
	return st
}
