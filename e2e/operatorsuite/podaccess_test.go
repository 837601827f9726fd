package operatorsuite

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A user reaches a Valkey pod the way any pod is reached: kubectl exec'd valkey-cli without
// -h (the pod's localhost) and kubectl port-forward (which connects to the pod's localhost,
// as a kubelet does) both get an answer, because Valkey listens on every address of its pod.
func TestAValkeyPodAnswersExecAndPortForwardOnItsLocalhost(t *testing.T) {
	ns, ctx, vc := steadyReplication(t, "access", 4*time.Minute)
	pod, pass := vc.Status.Primary, password(t, vc)

	out := kubectlOut(t, ctx, "-n", ns, "exec", pod, "-c", "valkey", "--",
		"valkey-cli", "--no-auth-warning", "--pass", pass, "ping")
	if strings.TrimSpace(out) != "PONG" {
		t.Fatalf("kubectl exec %s -- valkey-cli ping = %q; want PONG from the pod's own localhost", pod, out)
	}

	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd, err := cl.Kubectl(pctx, "-n", ns, "port-forward", "--address", "127.0.0.1", "pod/"+pod, ":6379")
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	forwarding := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 6379`)
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := forwarding.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	var local string
	select {
	case local = <-port:
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward printed no local port; stderr: %s", stderr.String())
	}
	c := appClient(t, net.JoinHostPort("127.0.0.1", local), pass)
	if got, err := c.Do(ctx, c.B().Ping().Build()).ToString(); err != nil || got != "PONG" {
		t.Fatalf("PING through kubectl port-forward to %s: %q, %v; kubectl said: %s", pod, got, err, stderr.String())
	}
}
