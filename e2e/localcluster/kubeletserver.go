package localcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The node agent serves the kubelet API of every Node, the part of it the API server uses
// for its pod subresources and the node proxy:
//
//	GET /containerLogs/{namespace}/{pod}/{container}  pods/log (follow, previous, timestamps,
//	                                                  tailLines, sinceSeconds, sinceTime,
//	                                                  limitBytes, stream)
//	/exec/{namespace}/{pod}[/{uid}]/{container}        pods/exec (SPDY or websocket, v1-v4)
//	/attach/{namespace}/{pod}[/{uid}]/{container}      pods/attach (output only)
//	/portForward/{namespace}/{pod}[/{uid}]             pods/portforward
//	GET /healthz, GET /pods                            nodes/proxy
//
// Exec, attach and port-forward are served by Kubernetes' own streaming code
// (k8s.io/cri-streaming, what container runtimes serve kubelet with). Each Node listens on
// its InternalIP, port 10250 when free (its status.daemonEndpoints says which), with a
// serving certificate for that address, and accepts only the API server's kubelet client
// certificate (kubeletpki.go); every request of that client is allowed. The Nodes declare no
// ExtendWebSocketsToKubelet feature, so the API server translates kubectl's websocket
// streams to SPDY itself, as it does for every node without that feature.

// kubeletPortWanted is kubelet's port; a node takes another if it is taken.
const kubeletPortWanted = 10250

// streamIdleTimeout is kubelet's default streaming connection idle timeout.
const streamIdleTimeout = 4 * time.Hour

type kubeletServer struct {
	cl   *Cluster
	node *node
}

// serveKubelet binds the node's kubelet API on its address and serves it until the cluster
// stops. It sets n.kubeletPort, which the Node's status reports.
func (c *Cluster) serveKubelet(n *node) error {
	cfg, err := c.cp.kubelet.serverConfig(n)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(n.ip.String(), strconv.Itoa(kubeletPortWanted)))
	if err != nil {
		ln, err = net.Listen("tcp", net.JoinHostPort(n.ip.String(), "0"))
	}
	if err != nil {
		return fmt.Errorf("kubelet API of %s: %w", n.name, err)
	}
	n.kubeletPort = int32(ln.Addr().(*net.TCPAddr).Port)
	s := &kubeletServer{cl: c, node: n}
	srv := &http.Server{
		Handler:           s.handler(),
		TLSConfig:         cfg,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(prefixed(c.opts.Log, "kubelet-api "+n.name), "", 0),
		// HTTP/1.1 only: streams are upgrades of an HTTP/1.1 connection.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	c.goBackground(func() { _ = srv.ServeTLS(ln, "", "") })
	c.goBackground(func() {
		<-c.ctx.Done()
		_ = srv.Close()
	})
	return nil
}

func (s *kubeletServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /pods", s.pods)
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, p := range []string{"/exec/{ns}/{pod}/{container}", "/exec/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, s.exec)
	}
	for _, p := range []string{"/attach/{ns}/{pod}/{container}", "/attach/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, s.attach)
	}
	for _, p := range []string{"/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"} {
		mux.HandleFunc(p, s.portForward)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The TLS layer already required a certificate of the API server's own client CA.
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != kubeletClientName {
			http.Error(w, "Forbidden: only the API server may use the kubelet API", http.StatusForbidden)
			return
		}
		if s.node.isStopped() {
			http.Error(w, fmt.Sprintf("node %s is stopped", s.node.name), http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// pod finds the Pod of the request among this node's (a terminating one too: its logs are
// still there), or answers 404.
func (s *kubeletServer) pod(w http.ResponseWriter, r *http.Request) (*podRunner, bool) {
	ns, name := r.PathValue("ns"), r.PathValue("pod")
	var pr *podRunner
	for _, cand := range s.cl.agent.runnersOn(s.node) {
		if p := cand.currentPod(); p.Namespace == ns && p.Name == name && (pr == nil || !cand.isTerminated()) {
			pr = cand
		}
	}
	if pr == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return nil, false
	}
	if uid := r.PathValue("uid"); uid != "" && string(pr.currentPod().UID) != uid {
		http.Error(w, "pod not found", http.StatusNotFound)
		return nil, false
	}
	return pr, true
}

// container finds the request's container of the Pod, or answers 404.
func (s *kubeletServer) container(w http.ResponseWriter, r *http.Request) (*podRunner, *container, bool) {
	pr, ok := s.pod(w, r)
	if !ok {
		return nil, nil, false
	}
	name := r.PathValue("container")
	for _, c := range append(append([]*container{}, pr.containers...), pr.inits...) {
		if c.spec.Name == name {
			return pr, c, true
		}
	}
	http.Error(w, fmt.Sprintf("container %q not found in pod %q", name, r.PathValue("pod")), http.StatusNotFound)
	return nil, nil, false
}

func (s *kubeletServer) pods(w http.ResponseWriter, _ *http.Request) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, r := range s.cl.agent.runnersOn(s.node) {
		list.Items = append(list.Items, *r.currentPod())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&list)
}

func (s *kubeletServer) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := logOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pr, c, ok := s.container(w, r)
	if !ok {
		return
	}
	run, err := c.runFor(r.PathValue("pod"), opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var stdout, stderr io.Writer = w, w
	if opts.Stream != nil {
		switch *opts.Stream {
		case corev1.LogStreamStdout:
			stderr = nil
		case corev1.LogStreamStderr:
			stdout = nil
		case corev1.LogStreamAll:
		default:
			http.Error(w, fmt.Sprintf("invalid stream type %q", *opts.Stream), http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	rc := http.NewResponseController(w)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // a log is not followed past its Pod's end
		select {
		case <-pr.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := run.serve(ctx, opts, stdout, stderr, func() { _ = rc.Flush() }); err != nil {
		fmt.Fprintf(s.cl.opts.Log, "[kubelet-api %s] logs of %s/%s: %v\n", s.node.name, r.PathValue("ns"), r.PathValue("pod"), err)
	}
}

// logOptions reads the query kube-apiserver sends for pods/log (and kubelet's legacy "tail").
func logOptions(r *http.Request) (*corev1.PodLogOptions, error) {
	q := r.URL.Query()
	opts := &corev1.PodLogOptions{}
	boolean := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		return strconv.ParseBool(v)
	}
	integer := func(name string) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("invalid %s %q", name, v)
		}
		return &i, nil
	}
	var err error
	if opts.Follow, err = boolean("follow"); err != nil {
		return nil, err
	}
	if opts.Previous, err = boolean("previous"); err != nil {
		return nil, err
	}
	if opts.Timestamps, err = boolean("timestamps"); err != nil {
		return nil, err
	}
	if opts.SinceSeconds, err = integer("sinceSeconds"); err != nil {
		return nil, err
	}
	if tail := q.Get("tail"); tail != "" && tail != "all" && q.Get("tailLines") == "" {
		q.Set("tailLines", tail)
	}
	if opts.TailLines, err = integer("tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = integer("limitBytes"); err != nil {
		return nil, err
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, fmt.Errorf("invalid sinceTime %q", v)
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if v := q.Get("stream"); v != "" {
		opts.Stream = &v
	}
	return opts, nil
}

// streamOptions reads an exec or attach request's options and finds its container (ok false:
// the error was written).
func (s *kubeletServer) streamOptions(w http.ResponseWriter, r *http.Request) (*remotecommand.Options, *podRunner, *container, bool) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, nil, nil, false
	}
	pr, c, ok := s.container(w, r)
	return opts, pr, c, ok
}

func (s *kubeletServer) exec(w http.ResponseWriter, r *http.Request) {
	opts, pr, c, ok := s.streamOptions(w, r)
	if !ok {
		return
	}
	if c.pid() == 0 {
		http.Error(w, fmt.Sprintf("container %q in pod %q is not running", c.spec.Name, r.PathValue("pod")), http.StatusBadRequest)
		return
	}
	remotecommand.ServeExec(w, r, containerStreams{pr, c}, r.PathValue("pod"), r.PathValue("uid"), c.spec.Name, r.URL.Query()["command"],
		opts, streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *kubeletServer) attach(w http.ResponseWriter, r *http.Request) {
	opts, pr, c, ok := s.streamOptions(w, r)
	if !ok {
		return
	}
	if opts.Stdin || opts.TTY {
		http.Error(w, "the local cluster attaches to a container's output only (no stdin, no tty)", http.StatusBadRequest)
		return
	}
	remotecommand.ServeAttach(w, r, containerStreams{pr, c}, r.PathValue("pod"), r.PathValue("uid"), c.spec.Name,
		opts, streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *kubeletServer) portForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pr, ok := s.pod(w, r)
	if !ok {
		return
	}
	portforward.ServePortForward(w, r, podPorts{pr}, r.PathValue("pod"), r.PathValue("uid"), opts,
		streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, portforward.SupportedProtocols)
}

// containerStreams runs exec and attach for one container.
type containerStreams struct {
	r *podRunner
	c *container
}

// ExecInContainer runs the command as Cluster.Exec does (execCommand: the container's cgroup,
// namespaces, root, user and environment), wired to the request's streams; with tty, on a
// new pseudo-terminal.
func (e containerStreams) ExecInContainer(ctx context.Context, _, _, _ string, command []string, in io.Reader, out, errOut io.WriteCloser,
	tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(command) == 0 {
		return errors.New("no command given")
	}
	cmd, err := e.r.execCommand(ctx, e.c, command)
	if err != nil {
		return err
	}
	if tty {
		return execOnTerminal(cmd, in, out, resize)
	}
	if resize != nil {
		go drain(resize) // no terminal to resize
	}
	if out != nil {
		cmd.Stdout = out
	}
	if errOut != nil {
		cmd.Stderr = errOut
	}
	var stdin io.WriteCloser
	if in != nil {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, in)
			_ = stdin.Close()
		}()
	}
	return exitError(cmd.Wait())
}

func drain(c <-chan remotecommand.TerminalSize) {
	for range c {
	}
}

// execOnTerminal runs cmd as the session leader of a new pseudo-terminal that carries in
// and out, resized as the client's terminal is.
func execOnTerminal(cmd *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	ptm, pts, err := openPTY()
	if err != nil {
		return err
	}
	defer func() { _ = ptm.Close() }()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	if resize != nil {
		go func() {
			for size := range resize {
				_ = unix.IoctlSetWinsize(int(ptm.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
			}
		}()
	}
	err = cmd.Start()
	_ = pts.Close()
	if err != nil {
		return err
	}
	if in != nil {
		go func() { _, _ = io.Copy(ptm, in) }()
	}
	copied := make(chan struct{})
	go func() {
		if out != nil {
			_, _ = io.Copy(out, ptm) // ends with EIO once every holder of the terminal is gone
		}
		close(copied)
	}()
	err = cmd.Wait()
	select {
	case <-copied:
	case <-time.After(time.Second): // a background process still holds the terminal
	}
	return exitError(err)
}

// openPTY opens a new pseudo-terminal pair.
func openPTY() (ptm, pts *os.File, err error) {
	ptm, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		_ = ptm.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		_ = ptm.Close()
		return nil, nil, err
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = ptm.Close()
		return nil, nil, err
	}
	return ptm, pts, nil
}

// exitError turns a command's exit into what the streaming code reports as an exit code.
func exitError(err error) error {
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

// AttachContainer streams the container's output from now on (the current run's log) until
// the run ends or the client goes: the local cluster does not keep a container's stdin.
func (e containerStreams) AttachContainer(ctx context.Context, _, _, _ string, _ io.Reader, out, errOut io.WriteCloser,
	_ bool, _ <-chan remotecommand.TerminalSize) error {
	run, err := e.c.runFor(e.r.currentPod().Name, false)
	if err != nil {
		return err
	}
	var stdout, stderr io.Writer
	if out != nil {
		stdout = out
	}
	if errOut != nil {
		stderr = errOut
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.r.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	zero := int64(0)
	return run.serve(ctx, &corev1.PodLogOptions{Follow: true, TailLines: &zero}, stdout, stderr, func() {})
}

// podPorts forwards to the Pod's ports.
type podPorts struct{ r *podRunner }

// PortForward connects the stream to the port on the Pod's own localhost, from inside its
// network namespace, as kubelet's runtime does: a server that listens only on 127.0.0.1 of
// its Pod is reached, one that listens only on the Pod IP is not.
func (p podPorts) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	defer func() { _ = stream.Close() }()
	netns := p.r.netns()
	if netns == "" {
		return fmt.Errorf("pod %s has no network namespace", p.r.currentPod().Name)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := dialInNetns(dctx, netns, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	cancel()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	toPod := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stream)
		// The client is done sending: the Pod sees the end of its input and may still answer.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		toPod <- err
	}()
	fromPod := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		fromPod <- err
	}()
	select {
	case err = <-fromPod:
	case err = <-toPod:
		if err == nil {
			err = <-fromPod
		}
	}
	if err != nil && !strings.Contains(err.Error(), "use of closed network connection") {
		return err
	}
	return nil
}
