package serviceproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkThroughput measures the proxy against the baseline that matters: the same
// valkey-server reached directly at its Pod IP, in the same run, interleaved so that noise
// from other work on the machine hits both alike. Each iteration does a fixed amount of work
// (so that `-benchtime 1x` is meaningful too):
//
//   - 2000 PING round trips on one connection (latency-bound: what a proxy adds per request);
//   - 32 SET + GET of a 64 KiB value (bandwidth-bound).
//
// Reported: round trips per second and MB/s (payload bytes both ways) for direct and proxied
// connections, and proxied/direct ratios (1.0 = no overhead).
func BenchmarkThroughput(b *testing.B) {
	cs, _ := cluster(b)
	ns := namespace(b, cs)
	const ip = "127.250.220.1"
	valkey(b, ip, 6379)
	sel := map[string]string{"app": "bench"}
	createPod(b, cs, ns, podSpec{name: "valkey-0", labels: sel, ip: ip}, true)
	svc := createService(b, cs, ns, "bench", sel, 6379, intstr.FromInt32(6379))
	p := startProxy(b, cs, Options{Logger: slog.New(slog.DiscardHandler)}) // keep the table clean
	waitServing(b, p, ns, "bench")

	direct := dialRESP(b, net.JoinHostPort(ip, "6379"))
	proxied := dialRESP(b, net.JoinHostPort(svc.Spec.ClusterIP, "6379"))
	const pings, bulks, size = 2000, 32, 64 << 10
	value := bytes.Repeat([]byte("v"), size)

	var dPing, pPing, dBulk, pBulk time.Duration
	n := 0
	for b.Loop() {
		n++
		dPing += direct.pings(b, pings)
		pPing += proxied.pings(b, pings)
		dBulk += direct.setGet(b, value, bulks)
		pBulk += proxied.setGet(b, value, bulks)
	}
	perSec := func(count float64, d time.Duration) float64 { return count / d.Seconds() }
	directRT, proxyRT := perSec(float64(n*pings), dPing), perSec(float64(n*pings), pPing)
	bulkBytes := float64(n * bulks * 2 * size)
	directMB, proxyMB := perSec(bulkBytes, dBulk)/1e6, perSec(bulkBytes, pBulk)/1e6
	b.ReportMetric(directRT, "direct-rt/s")
	b.ReportMetric(proxyRT, "proxy-rt/s")
	b.ReportMetric(proxyRT/directRT, "proxy/direct-rt")
	b.ReportMetric(directMB, "direct-MB/s")
	b.ReportMetric(proxyMB, "proxy-MB/s")
	b.ReportMetric(proxyMB/directMB, "proxy/direct-MB")
}

// respConn is a minimal RESP client: enough for PING, SET and GET, and nothing in the way.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRESP(tb testing.TB, addr string) *respConn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return &respConn{c: c, r: bufio.NewReaderSize(c, 128<<10)}
}

func (rc *respConn) pings(tb testing.TB, n int) time.Duration {
	_ = rc.c.SetDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	for range n {
		if err := respPing(rc.r, rc.c); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}

func (rc *respConn) setGet(tb testing.TB, value []byte, n int) time.Duration {
	_ = rc.c.SetDeadline(time.Now().Add(time.Minute))
	set := append([]byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$5\r\nbench\r\n$%d\r\n", len(value))), value...)
	set = append(set, "\r\n"...)
	get := []byte("*2\r\n$3\r\nGET\r\n$5\r\nbench\r\n")
	header := fmt.Sprintf("$%d\r\n", len(value))
	buf := make([]byte, len(value)+2)
	start := time.Now()
	for range n {
		if _, err := rc.c.Write(set); err != nil {
			tb.Fatal(err)
		}
		if line, err := rc.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
			tb.Fatalf("SET: %q, %v", line, err)
		}
		if _, err := rc.c.Write(get); err != nil {
			tb.Fatal(err)
		}
		if line, err := rc.r.ReadString('\n'); err != nil || line != header {
			tb.Fatalf("GET: %q, %v", line, err)
		}
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}
