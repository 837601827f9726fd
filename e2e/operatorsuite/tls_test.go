package operatorsuite

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/valkey-fsm/valkey-operator/e2e/valkeyapi"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-fsm/valkey-operator/actuators/kube"
	"github.com/valkey-fsm/valkey-operator/apis/v1alpha1"
	"github.com/valkey-fsm/valkey-operator/internal/testcert"
	"github.com/valkey-fsm/valkey-operator/plugin/certificate"
)

// tlsSecret makes a kubernetes.io/tls Secret whose certificate names every pod of cluster
// name (a wildcard on its headless Service) and its client Service.
func tlsSecret(t *testing.T, ctx context.Context, ns, name string) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA("e2e-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Issue(2, []string{"*." + name + "-nodes." + ns + ".svc", name + "." + ns + ".svc"}, nil, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM}}
	if err := k.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	return ca
}

// tlsClient connects to addr over TLS, verifying the server as serverName.
func tlsClient(addr, pass string, cfg *tls.Config) (vk.Client, error) {
	return vk.NewClient(vk.ClientOption{InitAddress: []string{addr}, Password: pass, TLSConfig: cfg, DisableCache: true, DisableRetry: true, ForceSingleClient: true,
		Dialer: net.Dialer{Timeout: 2 * time.Second}})
}

// rolledTo waits until every pod runs the TLS mode and the cluster is Steady and converged.
func rolledTo(t *testing.T, ns, name string, mode string) *v1alpha1.ValkeyCluster {
	t.Helper()
	return waitFor(t, ns, name, 4*time.Minute, "every pod rolled to TLS "+mode, func(vc *v1alpha1.ValkeyCluster) bool {
		if !steadyWith(3)(vc) {
			return false
		}
		var pods corev1.PodList
		if err := k.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{kube.LabelCluster: name}); err != nil || len(pods.Items) != 3 {
			return false
		}
		for _, p := range pods.Items {
			if p.Annotations[kube.AnnotationTLS] != mode {
				return false
			}
		}
		return true
	})
}

// TLS turned on in a live cluster under a writer (Disabled → Both → TLSOnly, each a roll with
// hand-over): no write acknowledged by WAIT is lost (read back over TLS by an independent
// client); in Both, plain and TLS both work and replication uses TLS; in TLSOnly plain is
// refused on every pod, a client with the CA connects, one verifying another name does not,
// and the replicas follow the primary on the TLS port. Going back to Disabled at once is
// refused by the API server.
func TestTLSIsTurnedOnUnderAWriterWithoutLosingAWrite(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 12*time.Minute)
	ca := tlsSecret(t, ctx, ns, "secure")
	if err := k.Create(ctx, newCluster(ns, "secure", v1alpha1.TopologyReplication, 3)); err != nil {
		t.Fatal(err)
	}
	vc := waitFor(t, ns, "secure", 2*time.Minute, "Steady with 3 ready", steadyWith(3))
	writable(t, vc)
	pass := password(t, vc)
	var svc corev1.Service
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.NamesOf(valkeyapi.HubOf(vc)).Client}, &svc); err != nil {
		t.Fatal(err)
	}
	plainAddr := net.JoinHostPort(svc.Spec.ClusterIP, "6379")
	tlsAddr := net.JoinHostPort(svc.Spec.ClusterIP, "6380")
	svcName := "secure." + ns + ".svc"

	// The writer: SET then WAIT 1, through the client Service; plain until told to use TLS.
	var mu sync.Mutex
	useTLS := false
	var acked []string
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var c vk.Client
		for i := 0; wctx.Err() == nil; i++ {
			mu.Lock()
			overTLS := useTLS
			mu.Unlock()
			if c == nil {
				var err error
				if overTLS {
					c, err = tlsClient(tlsAddr, pass, ca.ClientConfig(svcName))
				} else {
					c, err = tlsClient(plainAddr, pass, nil)
				}
				if err != nil {
					time.Sleep(50 * time.Millisecond)
					continue
				}
			}
			key := fmt.Sprintf("tls:%d", i)
			err := c.Dedicated(func(dc vk.DedicatedClient) error {
				if err := dc.Do(wctx, dc.B().Set().Key(key).Value(key).Build()).Error(); err != nil {
					return err
				}
				n, err := dc.Do(wctx, dc.B().Wait().Numreplicas(1).Timeout(1000).Build()).AsInt64()
				if err == nil && n < 1 {
					err = fmt.Errorf("WAIT 1 answered %d", n)
				}
				return err
			})
			if err == nil {
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
			} else {
				c.Close()
				c = nil
				time.Sleep(20 * time.Millisecond)
			}
			if overTLS != useTLS && c != nil {
				c.Close()
				c = nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		if c != nil {
			c.Close()
		}
	}()
	defer func() { stop(); <-done }()

	vc = get(t, ns, "secure")
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSBoth, SecretName: "secure-tls"}
	update(t, ctx, vc)
	vc = rolledTo(t, ns, "secure", "Both")
	for _, n := range vc.Status.Nodes {
		name := n.Pod + ".secure-nodes." + ns + ".svc"
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6380"), pass, ca.ClientConfig(name)); err != nil {
			t.Errorf("%s: TLS in Both: %v", n.Pod, err)
		} else {
			c.Close()
		}
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6379"), pass, nil); err != nil {
			t.Errorf("%s: plain in Both: %v", n.Pod, err)
		} else {
			c.Close()
		}
	}
	mu.Lock()
	useTLS = true
	mu.Unlock()

	vc = get(t, ns, "secure")
	vc.Spec.TLS.Mode = v1alpha1.TLSOnly
	update(t, ctx, vc)
	vc = rolledTo(t, ns, "secure", "TLSOnly")
	time.Sleep(2 * time.Second) // the writer goes on over TLS after the last roll
	stop()
	<-done

	opPass := secretKey(t, vc, kube.KeyOperatorPassword)
	var primaryIP string
	for _, n := range vc.Status.Nodes {
		name := n.Pod + ".secure-nodes." + ns + ".svc"
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6379"), pass, nil); err == nil {
			c.Close()
			t.Errorf("%s: plain TCP still accepted in TLSOnly", n.Pod)
		}
		if c, err := tlsClient(net.JoinHostPort(n.IP, "6380"), pass, ca.ClientConfig("someone-else."+ns+".svc")); err == nil {
			c.Close()
			t.Errorf("%s: a certificate for another name was accepted by a verifying client", n.Pod)
		}
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(n.IP, "6380")}, Username: "operator", Password: opPass, TLSConfig: ca.ClientConfig(name),
			DisableCache: true, DisableRetry: true, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("%s: TLS as the operator: %v", n.Pod, err)
		}
		info, _ := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
		conf, _ := c.Do(ctx, c.B().ConfigGet().Parameter("tls-replication").Build()).AsStrMap()
		c.Close()
		if n.Role == v1alpha1.NodeRolePrimary {
			primaryIP = n.IP
			continue
		}
		if !strings.Contains(info, "master_port:6380") || !strings.Contains(info, "master_link_status:up") || conf["tls-replication"] != "yes" {
			t.Errorf("%s: replica not following over TLS (tls-replication %q):\n%s", n.Pod, conf["tls-replication"], info)
		}
	}

	// Every acknowledged write, read back over TLS from the primary by a client of its own.
	mu.Lock()
	keys := append([]string(nil), acked...)
	mu.Unlock()
	if len(keys) < 50 {
		t.Fatalf("the writer had only %d writes acknowledged", len(keys))
	}
	var primaryPod string
	for _, n := range vc.Status.Nodes {
		if n.IP == primaryIP {
			primaryPod = n.Pod
		}
	}
	r, err := tlsClient(net.JoinHostPort(primaryIP, "6380"), pass, ca.ClientConfig(primaryPod+".secure-nodes."+ns+".svc"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lost := 0
	for _, key := range keys {
		if v, err := r.Do(ctx, r.B().Get().Key(key).Build()).ToString(); err != nil || v != key {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d writes acknowledged by WAIT are lost after turning TLS on", lost, len(keys))
	}
	t.Logf("%d acknowledged writes across Disabled → Both → TLSOnly, all read back over TLS", len(keys))

	vc = get(t, ns, "secure")
	vc.Spec.TLS.Mode = v1alpha1.TLSDisabled
	if err := k.Update(ctx, vc); err == nil || !strings.Contains(err.Error(), "set Both first") {
		t.Errorf("TLSOnly → Disabled at once: %v", err)
	}
}

// servedSerial is the serial of the certificate the pod at ip serves, read over a handshake
// of the test's own that verifies it as name.
func servedSerial(t *testing.T, ca *testcert.CA, ip, name string) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(ip, "6380"), ca.ClientConfig(name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer conn.Close()
	return strings.ToUpper(conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16))
}

// A renewed certificate put in the Secret is served by every pod without a restart (same run
// ids), recorded in history (certificate-reloaded) and shown by kubectl valkey certificate; an
// expired one put there afterwards is refused and said (status, Event), and the pods keep
// serving the last good one while the cluster keeps taking writes.
func TestARenewedCertificateIsLoadedWithoutARestart(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 6*time.Minute)
	ca := tlsSecret(t, ctx, ns, "renew")
	vc := newCluster(ns, "renew", v1alpha1.TopologyReplication, 3)
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSOnly, SecretName: "renew-tls"}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	recorded := func(serial string) func(*v1alpha1.ValkeyCluster) bool {
		return func(vc *v1alpha1.ValkeyCluster) bool {
			return steadyWith(3)(vc) && vc.Status.Machine != nil && vc.Status.Machine.Certificate == serial
		}
	}
	vc = waitFor(t, ns, "renew", 2*time.Minute, "Steady, certificate 2 recorded", recorded("2"))
	opPass := secretKey(t, vc, kube.KeyOperatorPassword)
	runs := map[string]string{}
	runID := func(n v1alpha1.NodeStatus) string {
		c, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(n.IP, "6380")}, Username: "operator", Password: opPass,
			TLSConfig: ca.ClientConfig(n.Pod + ".renew-nodes." + ns + ".svc"), DisableCache: true, DisableRetry: true, ForceSingleClient: true})
		if err != nil {
			t.Fatalf("%s: %v", n.Pod, err)
		}
		defer c.Close()
		return infoFrom(t, c, "server")["run_id"]
	}
	for _, n := range vc.Status.Nodes {
		runs[n.Pod] = runID(n)
	}

	// Renewal: same CA, new serial, into the Secret the pods mount.
	pair, err := ca.Issue(3, []string{"*.renew-nodes." + ns + ".svc", "renew." + ns + ".svc"}, nil, time.Now().Add(-time.Minute), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var s corev1.Secret
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "renew-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["tls.crt"], s.Data["tls.key"] = pair.CertPEM, pair.KeyPEM
	if err := k.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	// The transition is written before the turn's report, so status.tls (what the verb shows)
	// may lag the record by one write: wait for both.
	vc = waitFor(t, ns, "renew", 2*time.Minute, "certificate 3 recorded and reported", func(vc *v1alpha1.ValkeyCluster) bool {
		if !recorded("3")(vc) || vc.Status.TLS == nil || len(vc.Status.TLS.Nodes) != 3 {
			return false
		}
		for _, n := range vc.Status.TLS.Nodes {
			if !n.MatchesSecret {
				return false
			}
		}
		return true
	})
	for _, n := range vc.Status.Nodes {
		if got := servedSerial(t, ca, n.IP, n.Pod+".renew-nodes."+ns+".svc"); got != "3" {
			t.Errorf("%s serves serial %s on the wire, want 3", n.Pod, got)
		}
		if got := runID(n); got != runs[n.Pod] {
			t.Errorf("%s restarted (run id %s, was %s)", n.Pod, got, runs[n.Pod])
		}
	}
	if !strings.Contains(strings.Join(eventsSince(vc, 1), ","), "certificate-reloaded") {
		t.Errorf("history lacks certificate-reloaded: %v", eventsSince(vc, 1))
	}
	var out strings.Builder
	if err := certificate.Print(&out, valkeyapi.HubOf(vc), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "  yes  ") != 3 || !strings.Contains(got, "serial 3") {
		t.Errorf("kubectl valkey certificate does not show every pod serving the Secret's certificate:\n%s", got)
	}

	// An expired certificate: refused and said; the pods keep serving 3, writes go on.
	expired, err := ca.Issue(4, []string{"*.renew-nodes." + ns + ".svc"}, nil, time.Now().Add(-48*time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "renew-tls"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Data["tls.crt"], s.Data["tls.key"] = expired.CertPEM, expired.KeyPEM
	if err := k.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "renew", time.Minute, "the expired certificate refused in status", func(vc *v1alpha1.ValkeyCluster) bool {
		return vc.Status.TLS != nil && strings.Contains(vc.Status.TLS.Refused, "expired")
	})
	if !eventSeen(t, ctx, ns, "renew", "TLSRefused") {
		t.Error("no TLSRefused Event")
	}
	time.Sleep(3 * time.Second) // several turns with the refused Secret mounted on the pods
	vc = get(t, ns, "renew")
	if !steadyWith(3)(vc) || vc.Status.Machine.Certificate != "3" {
		t.Fatalf("the cluster moved on the refused certificate:\n%s", summary(vc))
	}
	for _, n := range vc.Status.Nodes {
		if got := servedSerial(t, ca, n.IP, n.Pod+".renew-nodes."+ns+".svc"); got != "3" {
			t.Errorf("%s serves serial %s after an expired certificate was put in the Secret, want the last good one (3)", n.Pod, got)
		}
	}
	var primary string
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRolePrimary {
			primary = n.IP + "/" + n.Pod
		}
	}
	ip, pod, _ := strings.Cut(primary, "/")
	c, err := tlsClient(net.JoinHostPort(ip, "6380"), password(t, vc), ca.ClientConfig(pod+".renew-nodes."+ns+".svc"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := setAndWait(ctx, c, "after-refusal:", 10, 2); err != nil {
		t.Fatalf("writes with the refused certificate in the Secret: %v", err)
	}
}

// With clientCertificates every client must present a certificate the CA signed: the operator,
// the probes and replication present the node certificate and the cluster runs; an application
// client without one is refused, one with a certificate of the CA connects.
func TestClientCertificatesAreRequiredWhenAsked(t *testing.T) {
	ns := cl.Namespace(t)
	startOperator(t, "")
	ctx := ctxFor(t, 4*time.Minute)
	ca := tlsSecret(t, ctx, ns, "mtls")
	vc := newCluster(ns, "mtls", v1alpha1.TopologyReplication, 3)
	vc.Spec.TLS = v1alpha1.TLSSpec{Mode: v1alpha1.TLSOnly, SecretName: "mtls-tls", ClientCertificates: true}
	if err := k.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	vc = waitFor(t, ns, "mtls", 2*time.Minute, "Steady with 3 ready, replicas following", steadyWith(3))
	var primary v1alpha1.NodeStatus
	for _, n := range vc.Status.Nodes {
		if n.Role == v1alpha1.NodeRolePrimary {
			primary = n
		}
	}
	addr, name, pass := net.JoinHostPort(primary.IP, "6380"), primary.Pod+".mtls-nodes."+ns+".svc", password(t, vc)
	if c, err := tlsClient(addr, pass, ca.ClientConfig(name)); err == nil {
		// The handshake may complete before the server's refusal arrives: a command must fail.
		err = c.Do(ctx, c.B().Ping().Build()).Error()
		c.Close()
		if err == nil {
			t.Fatal("a client without a certificate was let in")
		}
	}
	pair, err := ca.Sign(testcert.Spec{Serial: 9, CommonName: "app", NotBefore: time.Now().Add(-time.Minute), ValidFor: time.Hour,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ca.ClientConfig(name)
	cfg.Certificates = []tls.Certificate{cert}
	c, err := tlsClient(addr, pass, cfg)
	if err != nil {
		t.Fatalf("a client with a certificate of the CA: %v", err)
	}
	defer c.Close()
	if err := setAndWait(ctx, c, "mtls:", 10, 2); err != nil {
		t.Fatalf("writes by a client with a certificate, acknowledged by both replicas over TLS: %v", err)
	}
	// kubectl valkey cli reaches a TLSOnly node that wants a client certificate: valkey-cli in
	// the pod presents the pod's own, as the readiness probe does.
	for _, args := range [][]string{{"mtls", "--", "DBSIZE"}, {"mtls", "--replica", "--", "DBSIZE"}} {
		out, errOut, err := pluginIn(t, pluginBinary(t), "", "cli", ns, args...)
		if err != nil || out != "10\n" {
			t.Errorf("kubectl valkey cli %v on a TLSOnly cluster with client certificates: %v %q %s", args, err, out, errOut)
		}
	}
}
