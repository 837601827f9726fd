package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeKind int

const (
	startupProbe probeKind = iota
	livenessProbe
	readinessProbe
)

func (k probeKind) String() string {
	return [...]string{"Startup", "Liveness", "Readiness"}[k]
}

type probeCounter struct {
	generation int
	lastRun    time.Time
	successes  int32
	failures   int32
}

// probeLoop runs a container's startup, liveness and readiness probes with kubelet's
// semantics (initial delay, period, timeout, success and failure thresholds) until ctx ends.
// It judges each run of the process afresh: counters reset when the container restarts.
func (r *podRunner) probeLoop(ctx context.Context, c *container) {
	probes := [3]*corev1.Probe{c.spec.StartupProbe, c.spec.LivenessProbe, c.spec.ReadinessProbe}
	var counters [3]probeCounter
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.mu.Lock()
		running := c.state.Running != nil && !c.stopping
		var startedAt time.Time
		if running {
			startedAt = c.state.Running.StartedAt.Time
		}
		gen, started := c.generation, c.started
		c.mu.Unlock()
		if !running {
			continue
		}
		if c.spec.ReadinessProbe == nil {
			r.setReady(c, gen, started)
		}
		for kind, p := range probes {
			if p == nil || (probeKind(kind) != startupProbe && !started) || (probeKind(kind) == startupProbe && started) {
				continue
			}
			pc := &counters[kind]
			if pc.generation != gen {
				*pc = probeCounter{generation: gen}
			}
			now := time.Now()
			period := seconds(p.PeriodSeconds, 10)
			if p.Exec != nil && pc.successes > 0 {
				period = max(period, r.cluster.opts.ExecProbeMinPeriod)
			}
			if now.Sub(startedAt) < time.Duration(p.InitialDelaySeconds)*time.Second ||
				now.Sub(pc.lastRun) < period {
				continue
			}
			pc.lastRun = now
			err := r.runProbe(ctx, c, p)
			if err == nil {
				pc.successes++
				pc.failures = 0
			} else {
				pc.failures++
				pc.successes = 0
			}
			succeeded := pc.successes >= max(p.SuccessThreshold, 1)
			failed := pc.failures >= defaultInt32(p.FailureThreshold, 3)
			switch probeKind(kind) {
			case startupProbe:
				if succeeded {
					c.mu.Lock()
					if c.generation == gen {
						c.started = true
					}
					c.mu.Unlock()
					started = true
					r.changed()
				} else if failed {
					r.event(corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("Startup probe failed for %s: %v", c.spec.Name, err))
					go r.killForRestart(c, gen, p)
				}
			case livenessProbe:
				if failed {
					r.event(corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("Liveness probe failed for %s: %v", c.spec.Name, err))
					go r.killForRestart(c, gen, p)
				}
			case readinessProbe:
				if succeeded {
					r.setReady(c, gen, true)
				} else if failed {
					r.setReady(c, gen, false)
				}
			}
		}
	}
}

func (r *podRunner) setReady(c *container, gen int, ready bool) {
	c.mu.Lock()
	changed := c.generation == gen && c.state.Running != nil && c.ready != ready
	if changed {
		c.ready = ready
	}
	c.mu.Unlock()
	if changed {
		r.changed()
	}
}

// killForRestart ends a container whose liveness or startup probe failed; its supervisor
// then restarts it according to the Pod's restart policy.
func (r *podRunner) killForRestart(c *container, gen int, p *corev1.Probe) {
	c.mu.Lock()
	same := c.generation == gen
	c.mu.Unlock()
	if !same {
		return
	}
	grace := r.gracePeriod()
	if p.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	c.stop(grace)
	c.mu.Lock()
	c.stopping = false
	c.mu.Unlock()
}

func seconds(v int32, def int32) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Second
}

func defaultInt32(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// runProbe performs one probe: exec inside the container's namespaces, a TCP connect, or an
// HTTP GET, to the Pod's IP unless the probe names a host.
func (r *podRunner) runProbe(ctx context.Context, c *container, p *corev1.Probe) error {
	timeout := seconds(p.TimeoutSeconds, 1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		out, err := r.execIn(ctx, c, p.Exec.Command)
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = r.ip.String()
		}
		port, err := resolvePort(p.TCPSocket.Port, &c.spec)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.HTTPGet != nil:
		g := p.HTTPGet
		host := g.Host
		if host == "" {
			host = r.ip.String()
		}
		port, err := resolvePort(g.Port, &c.spec)
		if err != nil {
			return err
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+g.Path, nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		// Kubelet does not verify probe certificates either.
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe returned %d", resp.StatusCode)
		}
		return nil
	}
	return fmt.Errorf("probe type not supported by the local cluster (exec, tcpSocket and httpGet are)")
}

func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

// execIn runs a command inside a running container: its cgroup (so partitions and pauses
// apply to it as to the container), its mount and UTS namespaces, its root and working
// directory, its environment. On ctx's end the command and everything it started are killed.
func (r *podRunner) execIn(ctx context.Context, c *container, command []string) ([]byte, error) {
	cmd, err := r.execCommand(ctx, c, command)
	if err != nil {
		return nil, err
	}
	return cmd.CombinedOutput()
}

// execCommand prepares (does not start) what execIn runs, for callers that wire its input
// and output themselves (the kubelet API's exec).
func (r *podRunner) execCommand(ctx context.Context, c *container, command []string) (*exec.Cmd, error) {
	pid := c.pid()
	// The environment the container started with: kubelet resolves env (secretKeyRef and the
	// rest) when it starts a container, and an exec (a probe, kubectl exec) runs with that,
	// whatever the Secret says now.
	env := c.startEnv()
	if pid == 0 || env == nil {
		return nil, fmt.Errorf("container %s is not running", c.spec.Name)
	}
	ns := []string{"--target", strconv.Itoa(pid), "--net", "--mount", "--uts", "--root", "--wd"}
	if sec := r.security(c); sec.uid != nil {
		// As the container's user, as the runtime runs an exec.
		gid := int64(0)
		if sec.gid != nil {
			gid = *sec.gid
		}
		ns = append(ns, "--setuid", strconv.FormatInt(*sec.uid, 10), "--setgid", strconv.FormatInt(gid, 10))
	}
	// The exec's processes are the container's: in its memory group too, they count toward
	// its limit, as a runtime's exec does.
	c.mu.Lock()
	mem := c.mem
	c.mu.Unlock()
	if mem == c.cgroup() {
		mem = ""
	}
	args := append(append([]string{"-c", `echo $$ > "$1/cgroup.procs" && { [ -z "$2" ] || echo $$ > "$2/cgroup.procs"; } && shift 2 && exec nsenter "$@"`, "exec", c.cgroup(), mem}, ns...), append([]string{"--"}, command...)...)
	cmd := exec.CommandContext(ctx, "/bin/sh", args...)
	cmd.Env = append(env, envClusterDir+"="+r.cluster.slot.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Output pipes held open by a straggler must not hang the caller past its deadline.
	cmd.WaitDelay = 200 * time.Millisecond
	return cmd, nil
}
