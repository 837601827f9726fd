package valkey

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	vk "github.com/valkey-io/valkey-go"

	"github.com/valkey-fsm/valkey-operator/internal/testcert"
)

// tlsConf writes a CA-signed certificate for name into dir and returns the valkey.conf lines
// that serve it on TLSPort beside the plain port (the Both mode).
func tlsConf(t *testing.T, ca *testcert.CA, dir, name string) string {
	t.Helper()
	pair, err := ca.Issue(time.Now().UnixNano(), []string{name}, nil, time.Now().Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM, "ca.crt": ca.PEM} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("save \"\"\nappendonly no\ntls-port %d\ntls-cert-file %[2]s/tls.crt\ntls-key-file %[2]s/tls.key\ntls-ca-cert-file %[2]s/ca.crt\ntls-auth-clients no\ntls-replication no\n", TLSPort, dir)
}

// The pool reaches routed nodes over TLS only, verifying the CA and the node's name; a
// replica follows a primary that serves TLS over TLS (tls-replication set with REPLICAOF),
// and a hand-over between two such nodes keeps the old primary following over TLS.
func TestNodesServingTLSAreReachedAndReplicateOverTLS(t *testing.T) {
	ctx := context.Background()
	ca, err := testcert.NewCA("valkey-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	prim := startServerWith(t, "127.78.0.15", tlsConf(t, ca, dirA, "a.test"))
	repl := startServerWith(t, "127.78.0.16", tlsConf(t, ca, dirB, "b.test"))
	p := newTestPool(t)
	p.SetTLS(ca.ClientConfig(""))
	p.Route(prim.ip, "a.test")
	p.Route(repl.ip, "b.test")

	// Plain closed on the primary: what answers now can only be TLS.
	plain := NewPool(Options{Password: testPasswords.Operator, Timeout: time.Second})
	defer plain.Close()
	if err := plain.run(ctx, Addr(prim.ip), func(ctx context.Context, c vk.Client) error {
		return c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("port", "0").Build()).Error()
	}); err != nil {
		t.Fatal(err)
	}
	pv, rv := survey(t, p, prim), survey(t, p, repl)

	// The name is verified: a node routed under a name its certificate does not carry is
	// not reached.
	p.Route(repl.ip, "wrong.test")
	if _, err := p.Survey(ctx, repl.ip); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a certificate for another name was accepted: %v", err)
	}
	p.Route(repl.ip, "b.test")

	if err := p.Promote(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	if err := p.ReplicaOf(ctx, repl.ip, rv.RunID, prim.ip, testPasswords.Replication); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica linked over TLS", func() bool { return survey(t, p, repl).LinkUp })
	masterPort := func(s *server) string {
		var port string
		_ = p.run(ctx, Addr(s.ip), func(ctx context.Context, c vk.Client) error {
			text, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
			port = parseInfo(text)["master_port"]
			return err
		})
		return port
	}
	if got := masterPort(repl); got != fmt.Sprint(TLSPort) {
		t.Fatalf("the replica follows port %s, want the TLS port", got)
	}

	// FAILOVER TO wants a replica the primary counts online, which it does a moment after the
	// replica reports its link up (the CI run handed over in between once).
	eventually(t, "the primary counts its replica online", func() bool {
		var text string
		_ = p.run(ctx, Addr(prim.ip), func(ctx context.Context, c vk.Client) error {
			var err error
			text, err = c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
			return err
		})
		return strings.Contains(text, "state=online")
	})
	if err := p.HandOver(ctx, prim.ip, pv.RunID, repl.ip, rv.RunID, 2000); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the old primary follows the new one over TLS", func() bool {
		v := survey(t, p, prim)
		return v.LinkUp && masterPort(prim) == fmt.Sprint(TLSPort)
	})

	// A renewed certificate: new files, then reload-certificate; the same process serves it.
	before, err := p.ServedCertificate(ctx, prim.ip)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf(t, ca, dirA, "a.test")
	if again, err := p.ServedCertificate(ctx, prim.ip); err != nil || again.SerialNumber.Cmp(before.SerialNumber) != 0 {
		t.Fatalf("new files alone must change nothing on a running node: %v, %v", again, err)
	}
	if err := p.ReloadCertificate(ctx, prim.ip, pv.RunID); err != nil {
		t.Fatal(err)
	}
	after, err := p.ServedCertificate(ctx, prim.ip)
	if err != nil || after.SerialNumber.Cmp(before.SerialNumber) == 0 {
		t.Fatalf("after reload-certificate the node serves serial %v (was %v): %v", after, before.SerialNumber, err)
	}
	if survey(t, p, prim).RunID != pv.RunID {
		t.Fatal("the node restarted")
	}
}
