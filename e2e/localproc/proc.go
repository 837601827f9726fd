package localproc

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Proc is one process at IP:Port, working in Dir.
type Proc struct {
	Name, IP string
	Port     int
	Dir      string
	cmd      *exec.Cmd
	exited   chan struct{}
}

// New is a process named name on ip, at a free port, working in dir (created).
func New(tb testing.TB, name, ip, dir string) *Proc {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return &Proc{Name: name, IP: ip, Port: FreePort(tb, ip), Dir: dir}
}

// FreePort finds a port free on ip (the addresses are the test's, but another run of the
// same test may use them).
func FreePort(tb testing.TB, ip string) int {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		tb.Fatalf("no free port on %s: %v", ip, err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// Addr is IP:Port.
func (p *Proc) Addr() string { return net.JoinHostPort(p.IP, strconv.Itoa(p.Port)) }

// Start starts bin with args in Dir; its output is appended to Dir/Name.stdout (a restart
// keeps what the last run wrote). It dies with the test process (parent-death signal).
func (p *Proc) Start(tb testing.TB, bin string, args ...string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = p.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := os.OpenFile(filepath.Join(p.Dir, p.Name+".stdout"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		tb.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
}

// Running reports whether the last process started still runs.
func (p *Proc) Running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the process and waits until it is gone.
func (p *Proc) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}
