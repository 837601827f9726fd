package localcluster_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// The two ways kubectl streams exec and port-forward through the API server: websockets (the
// default) and SPDY (the fallback, forced by these variables).
var streamPaths = []struct {
	name string
	env  []string
}{
	{"websocket", nil},
	{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}},
}

// kubectl runs the real kubectl against the cluster and returns its standard output.
func kubectl(ctx context.Context, t *testing.T, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd, err := cl.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w; stderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// eventually retries f until it returns nil, failing the test with its last error.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectl logs with -c, --tail, --timestamps, --limit-bytes, --since, -f (a line printed
// later arrives, and the stream ends with the run) and --previous after a restart.
func TestKubeletAPILogs(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	// Each run numbers itself (the count lives on an emptyDir, which survives restarts),
	// prints three lines (one on stderr: a pipe of its own, hence the pauses that order them),
	// then one more once /tmp/go exists.
	printer := sh("main", `n=$(($(cat /work/n 2>/dev/null || echo 0) + 1)); echo $n > /work/n
echo "run $n line 1"; sleep 0.2; echo "run $n line 2 on stderr" >&2; sleep 0.2; echo "run $n line 3"
while [ ! -e /tmp/go ]; do sleep 0.1; done
echo "run $n later"; exec sleep 3600`)
	printer.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	createPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "printer"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{printer, sh("side", `echo side says hello; exec sleep 3600`)},
			Volumes:    []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	})
	if _, err := cl.WaitPodReady(ctx, ns, "printer", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	logs := func(args ...string) (string, error) {
		return kubectl(ctx, t, nil, "", append([]string{"-n", ns, "logs", "printer"}, args...)...)
	}
	want := "run 1 line 1\nrun 1 line 2 on stderr\nrun 1 line 3\n"
	eventually(t, 20*time.Second, "kubectl logs -c main", func() error {
		out, err := logs("-c", "main")
		if err == nil && out != want {
			err = fmt.Errorf("got %q, want %q", out, want)
		}
		return err
	})
	if out, err := logs("-c", "side"); err != nil || out != "side says hello\n" {
		t.Fatalf("kubectl logs -c side = %q, %v", out, err)
	}
	if out, err := logs("-c", "main", "--tail", "1"); err != nil || out != "run 1 line 3\n" {
		t.Fatalf("--tail 1 = %q, %v", out, err)
	}
	if out, err := logs("-c", "main", "--limit-bytes", "8"); err != nil || out != "run 1 li" {
		t.Fatalf("--limit-bytes 8 = %q, %v", out, err)
	}
	if out, err := logs("-c", "main", "--since", "1h"); err != nil || out != want {
		t.Fatalf("--since 1h = %q, %v", out, err)
	}
	out, err := logs("-c", "main", "--timestamps", "--tail", "2")
	stamped := regexp.MustCompile(`^(\S+) run 1 line 2 on stderr\n(\S+) run 1 line 3\n$`).FindStringSubmatch(out)
	if err != nil || stamped == nil {
		t.Fatalf("--timestamps --tail 2 = %q, %v", out, err)
	}
	if ts, err := time.Parse(time.RFC3339Nano, stamped[1]); err != nil || time.Since(ts) > time.Minute || time.Since(ts) < 0 {
		t.Fatalf("timestamp %q: %v (not within the last minute)", stamped[1], err)
	}
	if _, err := logs("-c", "main", "--previous"); err == nil || !strings.Contains(err.Error(), `previous terminated container "main" in pod "printer" not found`) {
		t.Fatalf("--previous before any restart: %v; want kubelet's not found", err)
	}

	// Follow: the line printed later arrives on the open stream.
	follow, err := cl.Kubectl(ctx, "-n", ns, "logs", "-f", "printer", "-c", "main")
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var followErr bytes.Buffer
	follow.Stderr = &followErr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl logs -f ended before %q (stderr: %s)", want, followErr.String())
			}
			if l != want {
				t.Fatalf("kubectl logs -f: got line %q, want %q", l, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("kubectl logs -f: no line %q after 20s", want)
		}
	}
	next("run 1 line 1")
	next("run 1 line 2 on stderr")
	next("run 1 line 3")
	if _, err := cl.Exec(ctx, ns, "printer", "main", "touch", "/tmp/go"); err != nil {
		t.Fatal(err)
	}
	next("run 1 later")

	// A restart ends the followed run's stream; --previous shows that run, the default the new one.
	if err := cl.KillContainer(ns, "printer", "main"); err != nil {
		t.Fatal(err)
	}
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("kubectl logs -f printed %q after the container was killed; want the end of the stream", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("kubectl logs -f still follows a killed container after 20s")
	}
	waitPod(t, ns, "printer", 45*time.Second, "main restarted and running", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "main" {
				return cs.RestartCount == 1 && cs.State.Running != nil
			}
		}
		return false
	})
	wantPrevious := "run 1 line 1\nrun 1 line 2 on stderr\nrun 1 line 3\nrun 1 later\n"
	if out, err := logs("-c", "main", "--previous"); err != nil || out != wantPrevious {
		t.Fatalf("--previous = %q, %v; want %q", out, err, wantPrevious)
	}
	eventually(t, 20*time.Second, "kubectl logs after the restart", func() error {
		out, err := logs("-c", "main")
		if err == nil && out != "run 2 line 1\nrun 2 line 2 on stderr\nrun 2 line 3\n" {
			err = fmt.Errorf("got %q, want run 2's three lines", out)
		}
		return err
	})
}

// kubectl exec: valkey-cli in the container (its environment too), stdin echoed back, the exit
// code carried through, on both stream paths; a terminal through client-go's executors.
func TestKubeletAPIExec(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	createPod(t, ns, npValkeyPod("vk", nil))
	p, err := cl.WaitPodReady(ctx, ns, "vk", 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range streamPaths {
		t.Run(path.name, func(t *testing.T) {
			run := func(stdin string, args ...string) (string, error) {
				return kubectl(ctx, t, path.env, stdin, append([]string{"-n", ns, "exec", "vk"}, args...)...)
			}
			if out, err := run("", "--", "valkey-cli", "-h", p.Status.PodIP, "ping"); err != nil || out != "PONG\n" {
				t.Fatalf("exec valkey-cli -h %s ping = %q, %v", p.Status.PodIP, out, err)
			}
			if out, err := run("", "-c", "valkey", "--", "sh", "-c", `valkey-cli -h "$POD_IP" ping; echo "$HOSTNAME" >&2`); err != nil || out != "PONG\n" {
				t.Fatalf(`exec sh -c 'valkey-cli -h "$POD_IP" ping' = %q, %v`, out, err)
			}
			input := "hello\nfrom stdin\n"
			if out, err := run(input, "-i", "--", "cat"); err != nil || out != input {
				t.Fatalf("exec -i cat = %q, %v; want the input back", out, err)
			}
			_, err := run("", "--", "sh", "-c", "exit 3")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exec sh -c 'exit 3': %v; want kubectl to exit with 3", err)
			}
		})
	}

	// A terminal, through client-go's executors without fallback: each path on its own.
	req := cl.Clientset().CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("vk").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "valkey", Command: []string{"tty"}, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cl.RESTConfig(), "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := remotecommand.NewSPDYExecutor(cl.RESTConfig(), "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]remotecommand.Executor{"websocket": ws, "spdy": sp} {
		var out bytes.Buffer
		if err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Tty: true}); err != nil {
			t.Fatalf("%s: exec -t tty: %v", name, err)
		}
		if !regexp.MustCompile(`^/dev/pts/\d+\r?\n$`).Match(out.Bytes()) {
			t.Fatalf("%s: exec -t tty printed %q; want a pseudo-terminal", name, out.String())
		}
	}
}

// kubectl port-forward to a 127.0.0.1 port kubectl picks, and a PING through it, on both
// stream paths; then client-go's websocket tunnel on its own.
func TestKubeletAPIPortForward(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 3*time.Minute)
	// A server on the Pod's localhost only: a kubelet forwards to the Pod's own localhost.
	createPod(t, ns, localhostValkeyPod("vk", 6379))
	if _, err := cl.WaitPodReady(ctx, ns, "vk", 60*time.Second); err != nil {
		t.Fatal(err)
	}
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 6379`)
	for _, path := range streamPaths {
		t.Run(path.name, func(t *testing.T) {
			pctx, cancel := context.WithCancel(ctx)
			defer cancel()
			cmd, err := cl.Kubectl(pctx, "-n", ns, "port-forward", "--address", "127.0.0.1", "pod/vk", ":6379")
			if err != nil {
				t.Fatal(err)
			}
			cmd.Env = append(cmd.Env, path.env...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); _ = cmd.Wait() }()
			port := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
						port <- m[1]
					}
				}
				_, _ = io.Copy(io.Discard, stdout)
			}()
			select {
			case p := <-port:
				for i := 0; i < 2; i++ { // each connection is a stream pair of its own
					pingThrough(t, net.JoinHostPort("127.0.0.1", p))
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("kubectl port-forward printed no local port; stderr: %s", errOut.String())
			}
		})
	}

	req := cl.Clientset().CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("vk").SubResource("portforward")
	tunnel, err := portforward.NewSPDYOverWebsocketDialerForStreaming(req.URL(), cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	rt, upgrader, err := spdy.RoundTripperFor(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	direct := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, "POST", req.URL())
	for name, dialer := range map[string]httpstream.Dialer{"websocket": tunnel, "spdy": direct} {
		stop, ready := make(chan struct{}), make(chan struct{})
		var out, errOut bytes.Buffer
		fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:6379"}, stop, ready, &out, &errOut)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- fw.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("%s: port-forward: %v (%s)", name, err, errOut.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: port-forward not ready after 30s", name)
		}
		ports, err := fw.GetPorts()
		if err != nil || len(ports) != 1 {
			t.Fatalf("%s: ports %v, %v", name, ports, err)
		}
		pingThrough(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("%s: port-forward ended with %v", name, err)
		}
	}
}

// pingThrough sends PING over a connection to addr and wants +PONG.
func pingThrough(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING through %s: %q, %v", addr, line, err)
	}
}

// The API server reaches every node's kubelet API by the node's address, verifying its
// certificate (logs of a pod on each node); a client that is not the API server is refused,
// with or without a certificate of its own.
func TestKubeletAPIOnlyServesTheAPIServer(t *testing.T) {
	ns := cl.Namespace(t)
	ctx := ctxFor(t, 2*time.Minute)
	for _, name := range cl.NodeNames() {
		c := sh("c", "echo hello from "+name+"; exec sleep 3600")
		createPod(t, ns, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + name},
			Spec:       corev1.PodSpec{NodeName: name, Containers: []corev1.Container{c}},
		})
	}
	for _, name := range cl.NodeNames() {
		if _, err := cl.WaitPodReady(ctx, ns, "on-"+name, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "logs of a pod on "+name, func() error {
			out, err := kubectl(ctx, t, nil, "", "-n", ns, "logs", "on-"+name)
			if err == nil && out != "hello from "+name+"\n" {
				err = fmt.Errorf("got %q", out)
			}
			return err
		})

		n, err := cl.Clientset().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if port == 0 || ip == "" {
			t.Fatalf("node %s: InternalIP %q, kubelet port %d", name, ip, port)
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(int(port)))
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(cl.KubeletCA()) {
			t.Fatal("KubeletCA holds no certificate")
		}
		admin, err := tls.X509KeyPair(cl.RESTConfig().CertData, cl.RESTConfig().KeyData)
		if err != nil {
			t.Fatal(err)
		}
		// The admin's certificate (of the API server's client CA, which the node does not
		// trust) is sent even though the node asks for certificates of another CA.
		for who, cert := range map[string]*tls.Certificate{"no certificate": {}, "the admin's client certificate": &admin} {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
				RootCAs: roots, ServerName: ip, MinVersion: tls.VersionTLS12,
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil },
			}}}
			resp, err := hc.Get("https://" + addr + "/containerLogs/" + ns + "/on-" + name + "/c")
			if err == nil {
				_ = resp.Body.Close()
				t.Fatalf("%s with %s: %s; want the connection refused", addr, who, resp.Status)
			}
			var unknown x509.UnknownAuthorityError
			var invalid x509.HostnameError
			if errors.As(err, &unknown) || errors.As(err, &invalid) {
				t.Fatalf("%s: the node's serving certificate does not verify with KubeletCA: %v", addr, err)
			}
			if !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("%s with %s: %v; want a refused client certificate", addr, who, err)
			}
			t.Logf("%s with %s: %v", name, who, err)
		}
	}
}
