package serviceproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// ctxFor returns a context that ends with the test.
func ctxFor(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// testLogger sends the proxy's log to the test log, shown for failing tests and with -v.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(b []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// startProxy runs a Proxy until the test ends, and checks that Run returns nil then.
func startProxy(tb testing.TB, cs kubernetes.Interface, opts Options) *Proxy {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(tb)
	}
	p := New(cs, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("Run did not return within 10s of cancel")
		}
	})
	return p
}

// namespace creates a namespace for one test. Without a namespace controller a deleted
// namespace stays Terminating, so the cleanup deletes the test's objects itself.
func namespace(tb testing.TB, cs kubernetes.Interface) string {
	tb.Helper()
	ctx := ctxFor(tb, 30*time.Second)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "sp-"},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		zero := int64(0)
		del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
		if err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, del, metav1.ListOptions{}); err != nil {
			tb.Errorf("deleting pods: %v", err)
		}
		svcs, err := cs.CoreV1().Services(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			tb.Errorf("listing services: %v", err)
		} else {
			for _, s := range svcs.Items {
				if err := cs.CoreV1().Services(ns.Name).Delete(ctx, s.Name, del); err != nil {
					tb.Errorf("deleting service %s: %v", s.Name, err)
				}
			}
		}
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, del)
	})
	return ns.Name
}

// podSpec describes a Pod that a test stands up in place of the node agent.
type podSpec struct {
	name   string
	labels map[string]string
	ip     string
	ports  []corev1.ContainerPort
}

// createPod creates a Pod and sets its status as the node agent would: Running, with the
// given IP and Ready condition.
func createPod(tb testing.TB, cs kubernetes.Interface, ns string, s podSpec, ready bool) *corev1.Pod {
	tb.Helper()
	ctx := ctxFor(tb, 30*time.Second)
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: s.labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "valkey/valkey:8", Ports: s.ports,
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = s.ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: s.ip}}
	pod.Status.Conditions = []corev1.PodCondition{readyCondition(ready)}
	pod, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return pod
}

func readyCondition(ready bool) corev1.PodCondition {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: corev1.PodReady, Status: st, LastTransitionTime: metav1.Now()}
}

// setReady flips a Pod's Ready condition through the status subresource.
func setReady(tb testing.TB, cs kubernetes.Interface, ns, name string, ready bool) {
	tb.Helper()
	ctx := ctxFor(tb, 30*time.Second)
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{readyCondition(ready)}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// createService creates a ClusterIP Service with one TCP port and returns it with its
// allocated ClusterIP.
func createService(tb testing.TB, cs kubernetes.Interface, ns, name string, selector map[string]string, port int32, target intstr.IntOrString) *corev1.Service {
	tb.Helper()
	ctx := ctxFor(tb, 30*time.Second)
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: selector,
			Ports:    []corev1.ServicePort{{Name: "main", Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.HasPrefix(svc.Spec.ClusterIP, "127.250.") {
		tb.Fatalf("service got ClusterIP %q, outside the test range %s", svc.Spec.ClusterIP, serviceRange)
	}
	return svc
}

// waitServing waits until the proxy listens for the Service.
func waitServing(tb testing.TB, p *Proxy, ns, name string) {
	tb.Helper()
	if err := p.WaitServing(ctxFor(tb, 10*time.Second), ns, name); err != nil {
		tb.Fatalf("service %s/%s not served: %v", ns, name, err)
	}
}

// echoServer listens on ip:port, greets every connection with its name and the client's
// address ("name 127.0.0.1\n"), then echoes.
func echoServer(tb testing.TB, name, ip string, port int) {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(port)))
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
				_, _ = fmt.Fprintf(c, "%s %s\n", name, host)
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// greeting dials addr (from the local IP from, "" for any) and returns the echo server's
// greeting: the backend's name and the client address it saw.
func greeting(addr, from string) (backend, client string, err error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return "", "", fmt.Errorf("bad greeting %q", line)
	}
	return f[0], f[1], nil
}

// eventually retries cond every 20 ms until it returns nil or within passes, and fails the
// test with cond's last error. Tests use it where the proxy must react to a change in the
// API: the limit is what "promptly" means.
func eventually(tb testing.TB, within time.Duration, what string, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// valkey runs valkey-server bound to ip:port until the test ends.
func valkey(tb testing.TB, ip string, port int) {
	tb.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		tb.Skip("valkey-server is not installed (make valkey installs it)")
	}
	cmd := exec.Command(bin, "--bind", ip, "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", tb.TempDir(), "--logfile", "")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	// Dies with the test binary even when a panic or -timeout skips the cleanups.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			err = respPing(bufio.NewReader(c), c)
			_ = c.Close()
			if err == nil {
				return
			}
		}
		if time.Since(start) > 10*time.Second {
			tb.Fatalf("valkey-server on %s did not answer within 10s", addr)
		}
	}
}

// respPing sends one PING and expects +PONG.
func respPing(r *bufio.Reader, w io.Writer) error {
	if _, err := io.WriteString(w, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING: got %q", line)
	}
	return nil
}

// isRefusedOrReset tells whether err says the peer refused or dropped the connection (reset
// or immediate EOF), as opposed to a timeout.
func isRefusedOrReset(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}
