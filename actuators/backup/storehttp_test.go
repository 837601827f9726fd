package backup

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// headBucket asks st for its bucket, the smallest request a store answers, within 20 s.
func headBucket(t *testing.T, st Store) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := st.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(st.Bucket)})
	return time.Since(start), err
}

func TestAStoreEndpointOnALinkLocalAddressIsRefused(t *testing.T) {
	for _, endpoint := range []string{"http://169.254.169.254", "https://169.254.169.254", "http://[fe80::1]:9000", "https://[fd00:ec2::254]", "http://[::ffff:169.254.170.2]"} {
		t.Run(endpoint, func(t *testing.T) {
			st := Store{Endpoint: endpoint, AllowPlainHTTP: true, Bucket: "b", PathStyle: true, AccessKey: "a", SecretKey: "s"}
			took, err := headBucket(t, st)
			if !errors.Is(err, ErrRefusedAddress) {
				t.Fatalf("HeadBucket at %s: %v, want the address refused", endpoint, err)
			}
			if !strings.Contains(err.Error(), "the operator does not connect there") {
				t.Errorf("the refusal does not say why: %v", err)
			}
			// Refused before connecting and not retried: no connect timeout, no back-off.
			if took > 2*time.Second {
				t.Errorf("the refusal took %v", took)
			}
		})
	}
}

// TestAStoreEndpointNameResolvingToLinkLocalIsRefused resolves the endpoint's name through a
// DNS server of the test (on loopback; the product resolves through the system's): the check
// is on the resolved address, so a name cannot carry the operator to a metadata service.
func TestAStoreEndpointNameResolvingToLinkLocalIsRefused(t *testing.T) {
	var asked atomic.Int32
	dnsAddr := serveDNS(t, netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fe80::a9fe:a9fe"), &asked)
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dnsAddr)
	}}
	st := Store{Endpoint: "https://s3.tenant.example:9000", Bucket: "b", PathStyle: true, AccessKey: "a", SecretKey: "s",
		HTTPClient: newStoreHTTPClient(resolver, false)}
	took, err := headBucket(t, st)
	if !errors.Is(err, ErrRefusedAddress) {
		t.Fatalf("HeadBucket at a name resolving to link-local addresses: %v, want the address refused", err)
	}
	if asked.Load() == 0 {
		t.Fatal("the name was not resolved through the test's DNS server")
	}
	if !strings.Contains(err.Error(), "resolves to 169.254.169.254") && !strings.Contains(err.Error(), "resolves to fe80::a9fe:a9fe") {
		t.Errorf("the refusal does not name the resolved address: %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("the refusal took %v", took)
	}
}

func TestAPlainHTTPStoreEndpointIsRefusedUnlessTheStoreAllowsIt(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	st := Store{Endpoint: srv.URL, Bucket: "b", PathStyle: true, AccessKey: "a", SecretKey: "s"}
	if err := st.CheckEndpoint(); !errors.Is(err, ErrPlainHTTP) || !strings.Contains(err.Error(), "allowPlainHTTP: true") {
		t.Errorf("CheckEndpoint of %s: %v, want a refusal naming allowPlainHTTP", srv.URL, err)
	}
	if _, err := headBucket(t, st); !errors.Is(err, ErrPlainHTTP) {
		t.Fatalf("HeadBucket over plain HTTP: %v, want it refused", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("the store got %d request(s) over plain HTTP", n)
	}
	st.AllowPlainHTTP = true
	if err := st.CheckEndpoint(); err != nil {
		t.Errorf("CheckEndpoint with allowPlainHTTP: %v", err)
	}
	if _, err := headBucket(t, st); err != nil {
		t.Fatalf("HeadBucket with allowPlainHTTP: %v", err)
	}
	if requests.Load() == 0 {
		t.Fatal("the store allowing plain HTTP got no request")
	}
}

func TestAStoreRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		t.Cleanup(srv.Close)
		st := Store{Endpoint: srv.URL, AllowPlainHTTP: true, Bucket: "b", PathStyle: true, AccessKey: "a", SecretKey: "s"}
		_, err := headBucket(t, st)
		if !errors.Is(err, ErrRedirect) || !strings.Contains(err.Error(), other.URL) {
			t.Errorf("HeadBucket answered with %d: %v, want the redirect refused and named", code, err)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirects' target got %d request(s)", n)
	}
}

// serveDNS answers every A question with v4 and every AAAA question with v6, on a UDP port of
// 127.0.0.1, counting the questions in asked.
func serveDNS(t *testing.T, v4, v6 netip.Addr, asked *atomic.Int32) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsAnswer(buf[:n], v4, v6); reply != nil {
				asked.Add(1)
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// dnsAnswer is the answer to a one-question query (RFC 1035 4.1), nil for anything else.
func dnsAnswer(q []byte, v4, v6 netip.Addr) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	var rdata []byte
	switch qtype {
	case 1:
		rdata = v4.AsSlice()
	case 28:
		rdata = v6.AsSlice()
	}
	out := append([]byte{}, q[0:2]...)
	out = append(out, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // a response, recursion available; 1 question
	if rdata != nil {
		out[7] = 1 // one answer
	}
	out = append(out, question...)
	if rdata != nil {
		out = append(out, 0xc0, 12) // the question's name
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = append(out, 0, 1, 0, 0, 0, 60) // class IN, TTL 60 s
		out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
		out = append(out, rdata...)
	}
	return out
}
