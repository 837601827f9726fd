package serviceproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// prompt is how soon a Service or Pod change must apply to new connections.
const prompt = time.Second

func TestClusterIPReachesReadyValkeyPod(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	const ip = "127.250.200.1"
	valkey(t, ip, 6379)
	createPod(t, cs, ns, podSpec{name: "valkey-0", labels: map[string]string{"app": "valkey"}, ip: ip}, true)
	svc := createService(t, cs, ns, "valkey", map[string]string{"app": "valkey"}, 6379, intstr.FromInt32(6379))
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "valkey")

	c, err := net.DialTimeout("tcp", net.JoinHostPort(svc.Spec.ClusterIP, "6379"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	if err := respPing(r, c); err != nil {
		t.Fatalf("PING through the ClusterIP: %v", err)
	}
	if got := respCommand(t, r, c, "SET", "greeting", "through-the-proxy"); got != "+OK\r\n" {
		t.Fatalf("SET: got %q", got)
	}
	// The key is on the server behind the Pod IP: the proxy reached the real backend.
	d, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "6379"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_ = d.SetDeadline(time.Now().Add(5 * time.Second))
	dr := bufio.NewReader(d)
	if got := respCommand(t, dr, d, "GET", "greeting"); got != "$17\r\n" {
		t.Fatalf("GET directly: got header %q", got)
	}
	if body, _ := dr.ReadString('\n'); body != "through-the-proxy\r\n" {
		t.Fatalf("GET directly: got %q", body)
	}
}

// respCommand sends a command as a RESP array and returns the first reply line.
func respCommand(t *testing.T, r *bufio.Reader, w io.Writer, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestRoundRobinOverReadyPods(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "rr"}
	for i, name := range []string{"a", "b", "c"} {
		ip := fmt.Sprintf("127.250.201.%d", i+1)
		echoServer(t, name, ip, 7000)
		// c runs but is not Ready: it must never get a connection.
		createPod(t, cs, ns, podSpec{name: name, labels: sel, ip: ip}, name != "c")
	}
	svc := createService(t, cs, ns, "rr", sel, 80, intstr.FromInt32(7000))
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "rr")

	var got []string
	for range 6 {
		name, _, err := greeting(net.JoinHostPort(svc.Spec.ClusterIP, "80"), "")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, name)
	}
	for i, name := range got {
		if name != "a" && name != "b" {
			t.Fatalf("connection %d went to %q; want only the Ready pods a and b: %v", i, name, got)
		}
		if i > 0 && got[i-1] == name {
			t.Fatalf("connections %d and %d both went to %s; want alternation: %v", i-1, i, name, got)
		}
	}
}

func TestNotReadyPodStopsReceiving(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "nr"}
	echoServer(t, "a", "127.250.202.1", 7000)
	createPod(t, cs, ns, podSpec{name: "a", labels: sel, ip: "127.250.202.1"}, true)
	svc := createService(t, cs, ns, "nr", sel, 80, intstr.FromInt32(7000))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "nr")

	if name, _, err := greeting(addr, ""); err != nil || name != "a" {
		t.Fatalf("while Ready: got %q, %v", name, err)
	}

	setReady(t, cs, ns, "a", false)
	eventually(t, prompt, "no backend after Ready=False", func() error {
		start := time.Now()
		name, _, err := greeting(addr, "")
		if err == nil {
			return fmt.Errorf("still reached %s", name)
		}
		// Without a backend the client must learn it at once, not after a timeout.
		if !isRefusedOrReset(err) || time.Since(start) > 200*time.Millisecond {
			t.Fatalf("without a Ready backend: want an immediate reset, got %v after %v", err, time.Since(start))
		}
		return nil
	})

	setReady(t, cs, ns, "a", true)
	eventually(t, prompt, "backend again after Ready=True", func() error {
		_, _, err := greeting(addr, "")
		return err
	})
}

func TestFollowsChangedSelector(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	echoServer(t, "a", "127.250.203.1", 7000)
	echoServer(t, "b", "127.250.203.2", 7000)
	createPod(t, cs, ns, podSpec{name: "a", labels: map[string]string{"role": "a"}, ip: "127.250.203.1"}, true)
	createPod(t, cs, ns, podSpec{name: "b", labels: map[string]string{"role": "b"}, ip: "127.250.203.2"}, true)
	svc := createService(t, cs, ns, "sel", map[string]string{"role": "a"}, 80, intstr.FromInt32(7000))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "sel")

	for range 2 {
		if name, _, err := greeting(addr, ""); err != nil || name != "a" {
			t.Fatalf("selector role=a: got %q, %v", name, err)
		}
	}

	svc.Spec.Selector = map[string]string{"role": "b"}
	if _, err := cs.CoreV1().Services(ns).Update(ctxFor(t, 10*time.Second), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, prompt, "selector role=b applied", func() error {
		name, _, err := greeting(addr, "")
		if err != nil || name != "b" {
			return fmt.Errorf("got %q, %v", name, err)
		}
		return nil
	})
	for range 3 {
		if name, _, err := greeting(addr, ""); err != nil || name != "b" {
			t.Fatalf("after the change: got %q, %v", name, err)
		}
	}
}

func TestNamedTargetPort(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "named"}
	// The same port name maps to different numbers in different Pods, and one Ready Pod does
	// not have the name at all (nothing listens on its IP: picking it would fail the dial).
	echoServer(t, "a", "127.250.204.1", 7101)
	echoServer(t, "b", "127.250.204.2", 7102)
	createPod(t, cs, ns, podSpec{name: "a", labels: sel, ip: "127.250.204.1",
		ports: []corev1.ContainerPort{{Name: "other", ContainerPort: 7999}, {Name: "data", ContainerPort: 7101}}}, true)
	createPod(t, cs, ns, podSpec{name: "b", labels: sel, ip: "127.250.204.2",
		ports: []corev1.ContainerPort{{Name: "data", ContainerPort: 7102}}}, true)
	createPod(t, cs, ns, podSpec{name: "c", labels: sel, ip: "127.250.204.3",
		ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 7103}}}, true)
	svc := createService(t, cs, ns, "named", sel, 80, intstr.FromString("data"))
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "named")

	seen := map[string]int{}
	for range 4 {
		name, _, err := greeting(net.JoinHostPort(svc.Spec.ClusterIP, "80"), "")
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Fatalf("want 2 connections each to a (port 7101) and b (port 7102), got %v", seen)
	}
}

func TestSourceAddressPreserved(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "src"}
	echoServer(t, "a", "127.250.205.1", 7000)
	createPod(t, cs, ns, podSpec{name: "a", labels: sel, ip: "127.250.205.1"}, true)
	svc := createService(t, cs, ns, "src", sel, 80, intstr.FromInt32(7000))
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "src")

	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")
	for _, from := range []string{"127.250.210.7", ""} {
		_, client, err := greeting(addr, from)
		if err != nil {
			t.Fatal(err)
		}
		want := from
		if want == "" {
			want = "127.0.0.1" // the kernel's source for unbound loopback dials
		}
		if client != want {
			t.Errorf("dialing from %q: backend saw client %s, want %s", from, client, want)
		}
	}
}

func TestStaticBackendServesKubernetesService(t *testing.T) {
	cs, cfg := cluster(t)
	ctx := ctxFor(t, 30*time.Second)
	var kubeSvc *corev1.Service
	eventually(t, 20*time.Second, "default/kubernetes exists", func() error {
		var err error
		kubeSvc, err = cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err
	})
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, cs, Options{Static: map[string]string{"default/kubernetes": api.Host}})
	waitServing(t, p, "default", "kubernetes")

	// A client that only knows the in-cluster address, as a Pod would.
	inCluster := rest.CopyConfig(cfg)
	inCluster.Host = "https://" + net.JoinHostPort(kubeSvc.Spec.ClusterIP, fmt.Sprint(kubeSvc.Spec.Ports[0].Port))
	inCluster.ServerName = "localhost" // envtest's serving certificate names
	ics, err := kubernetes.NewForConfig(inCluster)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ics.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("API server through %s: %v", inCluster.Host, err)
	}
	t.Logf("API server %s reached through %s", v.GitVersion, inCluster.Host)

	// A selector-less Service without a static backend is served but has nobody behind it.
	ns := namespace(t, cs)
	bare := createService(t, cs, ns, "bare", nil, 80, intstr.FromInt32(80))
	waitServing(t, p, ns, "bare")
	start := time.Now()
	if _, _, err := greeting(net.JoinHostPort(bare.Spec.ClusterIP, "80"), ""); !isRefusedOrReset(err) || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("selector-less service: want an immediate reset, got %v after %v", err, time.Since(start))
	}
}

func TestServiceChangesMoveListeners(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "mv"}
	echoServer(t, "a", "127.250.206.1", 7000)
	createPod(t, cs, ns, podSpec{name: "a", labels: sel, ip: "127.250.206.1"}, true)
	svc := createService(t, cs, ns, "mv", sel, 80, intstr.FromInt32(7000))
	p := startProxy(t, cs, Options{})
	waitServing(t, p, ns, "mv")
	ip := svc.Spec.ClusterIP

	svc.Spec.Ports[0].Port = 81
	if _, err := cs.CoreV1().Services(ns).Update(ctxFor(t, 10*time.Second), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, prompt, "port 81 served and 80 closed", func() error {
		if _, _, err := greeting(net.JoinHostPort(ip, "81"), ""); err != nil {
			return fmt.Errorf("port 81: %w", err)
		}
		if _, _, err := greeting(net.JoinHostPort(ip, "80"), ""); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("port 80: want refused, got %v", err)
		}
		return nil
	})

	if err := cs.CoreV1().Services(ns).Delete(ctxFor(t, 10*time.Second), "mv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, prompt, "deleted service no longer served", func() error {
		if p.Serving(ns, "mv") {
			return errors.New("Serving still true")
		}
		if _, _, err := greeting(net.JoinHostPort(ip, "81"), ""); !errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("want refused, got %v", err)
		}
		return nil
	})
}

func TestRunReturnClosesListenersAndConnections(t *testing.T) {
	cs, _ := cluster(t)
	ns := namespace(t, cs)
	sel := map[string]string{"app": "stop"}
	echoServer(t, "a", "127.250.207.1", 7000)
	createPod(t, cs, ns, podSpec{name: "a", labels: sel, ip: "127.250.207.1"}, true)
	svc := createService(t, cs, ns, "stop", sel, 80, intstr.FromInt32(7000))
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "80")

	p := New(cs, Options{Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitServing(t, p, ns, "stop")

	// An established connection through the proxy.
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of cancel")
	}

	if _, err := net.DialTimeout("tcp", addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after Run returned: want connection refused, got %v", err)
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := r.ReadByte(); !isRefusedOrReset(err) {
		t.Errorf("established connection after Run returned: want EOF or reset, got %v", err)
	}
	if p.Serving(ns, "stop") {
		t.Error("Serving still true after Run returned")
	}
}
