package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container is one container of a running Pod: its spec, its current process and what
// kubelet would report about it.
type container struct {
	spec corev1.Container
	init bool
	cg   string // the container's cgroup directory
	// mem is the container's memory group (memcgroup.go): cg itself on a v2 machine, a group
	// of the v1 memory hierarchy on a hybrid one, "" when no memory controller is available.
	mem string
	// oomAtStart is the group's OOM-kill count when the current run started: a run that ends
	// with more was ended by the OOM killer.
	oomAtStart int64

	mu           sync.Mutex
	proc         *os.Process
	exited       chan struct{} // closed when the current process has been reaped
	state        corev1.ContainerState
	lastState    corev1.ContainerState
	restartCount int32
	ready        bool
	started      bool      // startup probe passed (or none)
	stopping     bool      // the agent is killing it on purpose (liveness, termination)
	generation   int       // increments on every start; probes reset when it changes
	runs         []*runLog // the previous run's and the current run's logs (containerlogs.go)
	// env is the environment the current run started with, resolved once at its start
	// (secretKeyRef, configMapKeyRef and envFrom values included), as kubelet does: exec
	// probes and the kubelet API's exec run with it, never with values read again.
	env []string
}

func (c *container) status(image string) corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                image,
		ImageID:              "localcluster://" + image,
		State:                c.state,
		LastTerminationState: c.lastState,
		Ready:                c.ready,
		RestartCount:         c.restartCount,
		Started:              ptrBool(c.started && c.state.Running != nil),
	}
	if c.proc != nil {
		st.ContainerID = "localcluster://" + strconv.Itoa(c.proc.Pid)
	}
	return st
}

func ptrBool(b bool) *bool { return &b }

// startEnv is the environment the current run started with (nil when it does not run).
func (c *container) startEnv() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.state.Running == nil {
		return nil
	}
	return slices.Clone(c.env)
}

func (c *container) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.state.Running == nil {
		return 0
	}
	return c.proc.Pid
}

// cgroup is the container's cgroup directory (set when it starts, read by faults and probes).
func (c *container) cgroup() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cg
}

// killAll SIGKILLs every process of the container, whatever it forked (a BGSAVE child too).
func (c *container) killAll() error {
	if c.pid() == 0 {
		return fmt.Errorf("container %s is not running", c.spec.Name)
	}
	return os.WriteFile(filepath.Join(c.cgroup(), "cgroup.kill"), []byte("1"), 0o644)
}

// freeze stops (true) or thaws (false) every process of the container.
func (c *container) freeze(frozen bool) error {
	if c.pid() == 0 {
		return fmt.Errorf("container %s is not running", c.spec.Name)
	}
	v := "0"
	if frozen {
		v = "1"
	}
	return os.WriteFile(filepath.Join(c.cgroup(), "cgroup.freeze"), []byte(v), 0o644)
}

// start launches the container's process. It returns once the process runs; the exit is
// recorded by the goroutine that reaps it, which closes c.exited.
func (r *podRunner) startContainer(c *container) error {
	r.startGate.RLock()
	defer r.startGate.RUnlock()
	// Resolved once per start, as kubelet does (a restart resolves again): a Secret or
	// ConfigMap changed later does not reach this run, not even its execs.
	startEnv, envMap, err := containerEnv(r.ctx, r.cs, r.currentPod(), &c.spec, r.ip.String(), r.node.ip.String(), r.cluster.apiHost, r.cluster.apiPort)
	if err != nil {
		r.setWaiting(c, "CreateContainerConfigError", err.Error())
		return err
	}
	argv, err := r.commandLine(c, envMap)
	if err != nil {
		r.setWaiting(c, "CreateContainerConfigError", err.Error())
		return err
	}
	env := withImagePrograms(slices.Clone(startEnv), r.cluster.opts.Images, c.spec.Image)
	mounts, err := r.mountArgs(c)
	if err != nil {
		r.setWaiting(c, "CreateContainerConfigError", err.Error())
		return err
	}
	cg, err := r.cluster.cg.ensure(string(r.currentPod().UID), c.spec.Name)
	if err != nil {
		return err
	}
	mem, err := r.memoryGroup(c, cg)
	if err != nil {
		r.setWaiting(c, "CreateContainerError", err.Error())
		return err
	}
	var oomAtStart int64
	if mem != "" {
		oomAtStart = r.cluster.mem.oomKills(mem)
	}
	c.mu.Lock()
	c.cg, c.mem, c.oomAtStart = cg, mem, oomAtStart
	c.mu.Unlock()
	joinMem := "" // the launcher joins cg anyway
	if mem != cg {
		joinMem = mem
	}
	cdir := filepath.Join(r.dir, "containers", c.spec.Name)
	root, scratch := filepath.Join(cdir, "root"), filepath.Join(cdir, "scratch")
	for _, d := range []string{root, scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	img, _ := lookupImage(r.cluster.opts.Images, c.spec.Image)
	wd := c.spec.WorkingDir
	if wd == "" {
		wd = img.WorkingDir
	}
	if wd == "" {
		wd = "/"
	}
	sec := r.security(c)
	rootMode := "rw"
	if sec.readOnlyRoot {
		rootMode = "ro"
	}
	args := []string{"--mount", "--uts", "--propagation", "private", "--", "/bin/sh", "-c", launchScript, "launch",
		cg, joinMem, root, scratch, wd, r.currentPod().Name, sec.userspec(), sec.groupList(), rootMode, img.RootFS, strconv.Itoa(len(mounts) / 3)}
	args = append(args, mounts...)
	args = append(args, argv...)
	netns := r.netns()
	if netns == "" {
		return fmt.Errorf("pod %s has no network namespace", r.currentPod().Name)
	}
	// nsenter puts the launcher in the Pod's network namespace; unshare then gives the
	// container its own mount and UTS namespaces.
	cmd := exec.Command("nsenter", append([]string{"--net=" + netns, "--", "unshare"}, args...)...)
	cmd.Env = append(env, envClusterDir+"="+r.cluster.slot.dir)
	logFile, err := os.OpenFile(r.logPath(c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// Where this run's output starts in the log: a failed run's message is taken from it.
	var logStart int64
	if st, err := logFile.Stat(); err == nil {
		logStart = st.Size()
	}
	run, err := r.openRunLog(c)
	if err != nil {
		_ = logFile.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = run.writers(logFile, r.cluster.opts.Log, r.currentPod().Namespace+"/"+r.currentPod().Name+"/"+c.spec.Name)
	// If this process dies without Stop (a panic), the kernel ends the container too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		run.discard()
		_ = logFile.Close()
		r.setWaiting(c, "StartError", err.Error())
		return err
	}
	c.keepRun(run)
	exited := make(chan struct{})
	c.mu.Lock()
	c.proc, c.exited, c.env = cmd.Process, exited, startEnv
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	c.ready, c.started, c.stopping = false, c.spec.StartupProbe == nil, false
	c.generation++
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		run.close()
		_ = logFile.Close()
		code, reason := exitCodeOf(err)
		if mem != "" && r.cluster.mem.oomKills(mem) > oomAtStart {
			// As the kubelet reports it: the kernel's OOM killer ended this run.
			reason = "OOMKilled"
		}
		message := ""
		if code != 0 && c.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			message = logTail(r.logPath(c.spec.Name), logStart)
		}
		c.mu.Lock()
		started := time.Time{}
		if c.state.Running != nil {
			started = c.state.Running.StartedAt.Time
		}
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: message,
			StartedAt: metav1.NewTime(started), FinishedAt: metav1.Now(),
			ContainerID: "localcluster://" + strconv.Itoa(cmd.Process.Pid),
		}}
		c.ready = false
		c.mu.Unlock()
		close(exited)
		r.changed()
	}()
	r.changed()
	return nil
}

// Kubelet's bounds for a termination message taken from the logs
// (FallbackToLogsOnError): the last 80 lines, at most 2 KiB.
const (
	terminationMessageLines = 80
	terminationMessageBytes = 2048
)

// logTail is the termination message kubelet makes of a failed container's logs: the last
// lines this run wrote (from offset start of the log file), within kubelet's bounds. The
// node agent has no termination-log file; the policy's fallback is what it implements.
func logTail(path string, start int64) string {
	data, err := os.ReadFile(path)
	if err != nil || start > int64(len(data)) {
		return ""
	}
	out := strings.TrimRight(string(data[start:]), "\n")
	lines := strings.Split(out, "\n")
	if len(lines) > terminationMessageLines {
		out = strings.Join(lines[len(lines)-terminationMessageLines:], "\n")
	}
	if len(out) > terminationMessageBytes {
		out = out[len(out)-terminationMessageBytes:]
	}
	return out
}

func exitCodeOf(err error) (int32, string) {
	if err == nil {
		return 0, "Completed"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal()), "Error"
		}
		return int32(ee.ExitCode()), "Error"
	}
	return 128, "Error"
}

func (r *podRunner) setWaiting(c *container, reason, msg string) {
	c.mu.Lock()
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	c.mu.Unlock()
	r.changed()
}

func (r *podRunner) logPath(container string) string {
	return filepath.Join(r.dir, "logs", container+".log")
}

// commandLine maps the container's image and command to a program on this machine and
// expands $(VAR) references in command and args.
func (r *podRunner) commandLine(c *container, env map[string]string) ([]string, error) {
	img, known := lookupImage(r.cluster.opts.Images, c.spec.Image)
	if img.Err != nil {
		return nil, fmt.Errorf("image %q cannot run in the local cluster: %w", c.spec.Image, img.Err)
	}
	cmd := c.spec.Command
	if len(cmd) == 0 {
		if !known {
			return nil, fmt.Errorf("image %q has no local mapping (Options.Images) and the container sets no command", c.spec.Image)
		}
		// Kubernetes' rule: the image's Cmd only when the container gives no args either.
		cmd = img.Entrypoint
		if len(c.spec.Args) == 0 {
			cmd = append(append([]string{}, cmd...), img.Cmd...)
		}
	}
	argv := make([]string, 0, len(cmd)+len(c.spec.Args))
	for _, a := range cmd {
		argv = append(argv, expand(a, env))
	}
	for _, a := range c.spec.Args {
		argv = append(argv, expand(a, env))
	}
	if p, ok := img.Programs[argv[0]]; ok {
		argv[0] = p
	}
	return argv, nil
}

// withImagePrograms puts the directory of the image's programs first on PATH, as the image's
// own PATH would: a command that starts through a shell ("sh -c '... exec valkey-server'") must
// find the image's valkey-server, not the one on this machine's PATH (found when pods of topology
// Cluster, which start through a shell step, ran 8.0 under a 9.1 image).
func withImagePrograms(env []string, images map[string]Image, image string) []string {
	img, _ := lookupImage(images, image)
	dirs := map[string]bool{}
	var first []string
	for _, p := range img.Programs {
		if d := filepath.Dir(p); !dirs[d] {
			dirs[d] = true
			first = append(first, d)
		}
	}
	if len(first) == 0 {
		return env
	}
	sort.Strings(first)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + strings.Join(first, ":") + ":" + v
		}
	}
	return env
}

// lookupImage finds an image's mapping: the image as written ("valkey/valkey:9.1.2"), then its
// repository with the tag's major.minor ("valkey/valkey:9.1"), then the repository alone.
func lookupImage(images map[string]Image, image string) (Image, bool) {
	if img, ok := images[image]; ok {
		return img, true
	}
	repo := imageRepository(image)
	if tag, ok := strings.CutPrefix(strings.SplitN(image, "@", 2)[0], repo+":"); ok {
		if parts := strings.SplitN(tag, ".", 3); len(parts) >= 2 {
			if img, ok := images[repo+":"+parts[0]+"."+parts[1]]; ok {
				return img, true
			}
		}
	}
	img, ok := images[repo]
	return img, ok
}

// imageRepository strips the tag and digest: "valkey/valkey:8.0" -> "valkey/valkey".
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// mountArgs lists SRC DST MODE triples for the launcher, one per volume mount, plus the
// termination-log file kubelet always provides.
func (r *podRunner) mountArgs(c *container) ([]string, error) {
	var out []string
	for _, m := range c.spec.VolumeMounts {
		src, ok := r.vols.paths[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s refers to no volume of the pod", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		if !path.IsAbs(m.MountPath) {
			return nil, fmt.Errorf("mount path %q is not absolute", m.MountPath)
		}
		dst, err := resolveInRoot(m.MountPath)
		if err != nil {
			return nil, err
		}
		out = append(out, src, dst, mode)
	}
	return out, nil
}

// waitExit waits for the current process to be reaped, or ctx.
func (c *container) waitExit(ctx context.Context) bool {
	c.mu.Lock()
	ch := c.exited
	c.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// stop ends the container as kubelet does: SIGTERM to the process group, SIGKILL after the
// grace period.
func (c *container) stop(grace time.Duration) {
	c.mu.Lock()
	c.stopping = true
	ch := c.exited
	running := c.proc != nil && c.state.Running != nil
	pid := 0
	if c.proc != nil {
		pid = c.proc.Pid
	}
	c.mu.Unlock()
	if !running || ch == nil {
		return
	}
	_ = os.WriteFile(filepath.Join(c.cgroup(), "cgroup.freeze"), []byte("0"), 0o644) // a frozen process cannot handle SIGTERM
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(grace):
		_ = os.WriteFile(filepath.Join(c.cgroup(), "cgroup.kill"), []byte("1"), 0o644)
		<-ch
	}
	// Whatever the main process left behind goes too.
	_ = os.WriteFile(filepath.Join(c.cgroup(), "cgroup.kill"), []byte("1"), 0o644)
}
