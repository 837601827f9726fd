package valkey

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/internal/testcert"
	"github.com/valkey-fsm/valkey-operator/machine"
)

// clusterTLSConf writes a CA-signed certificate for the node at ip (its IP and name in the
// certificate) into dir and returns the lines the operator renders for a Cluster topology with
// TLS: the TLS port beside the plain one, replication and the cluster bus over TLS.
func clusterTLSConf(t *testing.T, ca *testcert.CA, dir, ip string) string {
	t.Helper()
	pair, err := ca.Sign(testcert.Spec{Serial: time.Now().UnixNano(), CommonName: ip, DNSNames: []string{ip + ".test"}, IPs: []net.IP{net.ParseIP(ip)},
		NotBefore: time.Now().Add(-time.Minute), ValidFor: time.Hour, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := RenderConfig(ConfigInput{Cluster: true, TLS: TLSBoth})
	var lines []string
	for _, l := range strings.Split(in, "\n") {
		if strings.HasPrefix(l, "tls-") {
			lines = append(lines, strings.ReplaceAll(l, TLSDir, dir))
		}
	}
	if !strings.Contains(in, "tls-cluster yes\n") || !strings.Contains(in, "tls-replication yes\n") {
		t.Fatalf("cluster mode with TLS renders no TLS bus or replication:\n%s", in)
	}
	return strings.Join(lines, "\n") + "\n"
}

// A Cluster topology over TLS: the operator's own steps (MEET on the TLS port, ADDSLOTSRANGE,
// REPLICATE, a classic MIGRATE and, on 9.1, an atomic slot migration) form and reshard a
// cluster whose bus, replication and migrations are TLS, with the plain port closed on every
// node. Oracles independent of the operator: valkey-cli --tls --cluster check, every key read
// back through a TLS cluster client (a digest), and the bus port refusing plain TCP.
func TestAClusterOverTLSFormsReplicatesAndReshards(t *testing.T) {
	for version, bin := range valkeyBinaries(t) {
		t.Run(version, func(t *testing.T) { clusterOverTLS(t, version, bin) })
	}
}

func clusterOverTLS(t *testing.T, version, bin string) {
	ca, err := testcert.NewCA("cluster-tls-ca")
	if err != nil {
		t.Fatal(err)
	}
	third := map[string]int{"8.0": 60, "9.1": 61}[version] // 127.78.40-49 are the slotless tests'
	var nodes []*server
	// The operator's own timeout, not the tighter one of the plain tests: each new connection
	// is a TLS handshake, which a machine busy with other work can take over a second for.
	p := NewPool(Options{Password: testPasswords.Operator})
	t.Cleanup(p.Close)
	p.SetTLS(ca.ClientConfig(""))
	caFile := ""
	for i := 1; i <= 4; i++ {
		ip := fmt.Sprintf("127.78.%d.%d", third, i)
		dir := t.TempDir()
		s := startClusterServerWith(t, ip, bin, clusterTLSConf(t, ca, dir, ip))
		nodes = append(nodes, s)
		p.Route(ip, ip+".test")
		caFile = filepath.Join(dir, "ca.crt")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Plain closed everywhere: what answers now, and what the nodes say to each other, is TLS.
	for _, s := range nodes {
		if err := p.run(ctx, Addr(s.ip), func(ctx context.Context, c vk.Client) error {
			return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("port", "0").Build()).Error()
		}); err != nil {
			t.Fatal(err)
		}
	}
	runID := func(s *server) string { return survey(t, p, s).RunID }
	a, b, c, d := nodes[0], nodes[1], nodes[2], nodes[3]
	for _, s := range nodes[1:] {
		if err := p.Meet(ctx, s.ip, runID(s), a.ip); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every node knows every other over the TLS bus", func() bool {
		for _, s := range nodes {
			v, err := p.ClusterNodes(ctx, s.ip)
			if err != nil || len(v.Nodes) != len(nodes) {
				return false
			}
			for _, n := range v.Nodes {
				if n.Port != TLSPort {
					return false
				}
			}
		}
		return true
	})
	if err := p.AssignSlots(ctx, a.ip, runID(a), []machine.SlotRange{{Start: 0, End: 8191}}); err != nil {
		t.Fatal(err)
	}
	if err := p.AssignSlots(ctx, b.ip, runID(b), []machine.SlotRange{{Start: 8192, End: 16383}}); err != nil {
		t.Fatal(err)
	}
	for primary, replica := range map[*server]*server{a: c, b: d} {
		eventually(t, replica.ip+" sees "+primary.ip+" serve slots", func() bool {
			v, err := p.ClusterNodes(ctx, replica.ip)
			if err != nil {
				return false
			}
			for _, n := range v.Nodes {
				if n.IP == primary.ip && len(n.Slots) > 0 {
					return true
				}
			}
			return false
		})
		if err := p.Replicate(ctx, replica.ip, runID(replica), primary.ip, runID(primary), testPasswords.Replication); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range nodes {
		if err := p.OpenWrites(ctx, s.ip, runID(s)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "replicas linked to their primaries' TLS port", func() bool {
		for _, s := range []*server{c, d} {
			var info map[string]string
			_ = p.run(ctx, Addr(s.ip), func(ctx context.Context, cl vk.Client) error {
				text, err := cl.Do(ctx, cl.B().Info().Section("replication").Build()).ToString()
				info = parseInfo(text)
				return err
			})
			if info["master_link_status"] != "up" || info["master_port"] != strconv.Itoa(TLSPort) {
				return false
			}
		}
		return true
	})
	// The bus listens on the TLS port + 10000 and speaks TLS only: a plain client gets no
	// cluster message back.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(a.ip, strconv.Itoa(TLSPort+10000)), time.Second); err != nil {
		t.Fatalf("no cluster bus on %d: %v", TLSPort+10000, err)
	} else {
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write([]byte("RCmb\x00\x00\x00\x00plain bytes"))
		buf := make([]byte, 64)
		n, _ := conn.Read(buf)
		_ = conn.Close()
		if n > 0 && strings.HasPrefix(string(buf[:n]), "RCmb") {
			t.Fatal("the cluster bus answered a plain client")
		}
	}

	busRefusesPeersWithoutACertificate(t, ca, a.ip)

	app := tlsClusterClient(t, ca, a.ip)
	defer app.Close()
	const keys = 3000
	for i := 0; i < keys; i += 500 {
		cmds := make(vk.Commands, 0, 500)
		for k := i; k < i+500; k++ {
			cmds = append(cmds, app.B().Set().Key("tls:"+strconv.Itoa(k)).Value(strconv.Itoa(k*k)).Build())
		}
		for _, r := range app.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				t.Fatalf("writing over TLS: %v", err)
			}
		}
	}
	before := tlsDigest(t, app, keys)

	// Classic migration over TLS (MIGRATE follows tls-cluster): slots 0-99 from a to b.
	epochsParted(t, ctx, p, a.ip, b.ip, c.ip, d.ip)
	res, err := p.MigrateSlots(ctx, a.ip, "", b.ip, machine.SlotRange{Start: 0, End: 99}, []string{a.ip, b.ip}, false, testPasswords.Operator, 30*time.Second)
	if err != nil || res.SlotsLeft != 0 || res.KeysMoved == 0 {
		t.Fatalf("classic migration over TLS: %+v, %v", res, err)
	}
	if version == "9.1" {
		// Atomic slot migration: the target pulls the slots through a replication-like link.
		r := machine.SlotRange{Start: 100, End: 2000}
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err = p.MigrateSlots(ctx, a.ip, "", b.ip, r, []string{a.ip, b.ip}, true, testPasswords.Operator, 10*time.Second)
			if err != nil {
				t.Fatalf("atomic slot migration over TLS: %v", err)
			}
			if !res.Running && res.SlotsLeft == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("atomic slot migration over TLS did not finish: %+v", res)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	tlsClusterCheck(t, caFile, a.ip)
	if after := tlsDigest(t, app, keys); after != before {
		t.Fatal("the keys read back after the migrations differ from those written")
	}
}

// tlsClusterClient is an application's cluster client over TLS, verifying each node's
// certificate (by IP) against the CA.
func tlsClusterClient(t *testing.T, ca *testcert.CA, ip string) vk.Client {
	t.Helper()
	cl, err := vk.NewClient(vk.ClientOption{InitAddress: []string{net.JoinHostPort(ip, strconv.Itoa(TLSPort))}, Password: testPasswords.Client,
		DisableCache: true, TLSConfig: ca.ClientConfig("")})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// tlsDigest reads every key back and hashes names and values in key order.
func tlsDigest(t *testing.T, cl vk.Client, keys int) string {
	t.Helper()
	h := sha256.New()
	cmds := make(vk.Commands, 0, keys)
	for k := 0; k < keys; k++ {
		cmds = append(cmds, cl.B().Get().Key("tls:"+strconv.Itoa(k)).Build())
	}
	for i, r := range cl.DoMulti(context.Background(), cmds...) {
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("reading tls:%d: %v", i, err)
		}
		fmt.Fprintf(h, "%d=%s;", i, v)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// tlsClusterCheck is clusterCheck over TLS.
func tlsClusterCheck(t *testing.T, caFile, ip string) {
	t.Helper()
	var out []byte
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		cmd := exec.Command("valkey-cli", "--tls", "--cacert", caFile, "--cluster", "check", net.JoinHostPort(ip, strconv.Itoa(TLSPort)))
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+testPasswords.Client)
		out, _ = cmd.CombinedOutput()
		if strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") &&
			strings.Contains(string(out), "[OK] All 16384 slots covered.") && !strings.Contains(string(out), "[WARNING]") {
			t.Logf("valkey-cli --tls --cluster check:\n%s", out)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("valkey-cli --tls --cluster check does not find the cluster whole:\n%s", out)
}

// busRefusesPeersWithoutACertificate checks what keeps a pod that is not the cluster's off a
// TLS bus where no NetworkPolicy is enforced: the bus asks every peer for a certificate signed
// by the CA whatever tls-auth-clients says (Valkey's clusterAcceptHandler accepts bus
// connections with TLS_CLIENT_AUTH_YES), while the operator renders tls-auth-clients no unless
// spec.tls.clientCertificates, so applications need no certificate. A TLS peer without one is
// refused; one with a certificate of the CA is taken (it waits for a cluster message).
func busRefusesPeersWithoutACertificate(t *testing.T, ca *testcert.CA, ip string) {
	t.Helper()
	if conf := RenderConfig(ConfigInput{Cluster: true, TLS: TLSBoth}); !strings.Contains(conf, "tls-auth-clients no\n") {
		t.Fatalf("rendered without client certificates, the configuration still asks clients for one:\n%s", conf)
	}
	bus := net.JoinHostPort(ip, strconv.Itoa(TLSPort+10000))
	// read opens a TLS connection to the bus with cfg and reads: a refused certificate comes
	// back as an alert (after the handshake, in TLS 1.3), an accepted peer as a timeout.
	read := func(cfg *tls.Config) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", bus, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, err = conn.Read(make([]byte, 64))
		return err
	}
	noCert := ca.ClientConfig(ip + ".test")
	err := read(noCert)
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the TLS bus took a peer without a client certificate (tls-auth-clients no): %v", err)
	}
	pair, err := ca.Sign(testcert.Spec{Serial: time.Now().UnixNano(), CommonName: "peer", NotBefore: time.Now().Add(-time.Minute), ValidFor: time.Hour,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	withCert := noCert.Clone()
	withCert.Certificates = []tls.Certificate{cert}
	if err := read(withCert); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("the TLS bus refused a peer with a certificate of the CA: %v (the refusal above is then not about the certificate)", err)
	}
}
