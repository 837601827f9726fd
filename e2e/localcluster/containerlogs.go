package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A container's output is kept twice. Raw, every run appended, in logPath (Cluster.LogPath,
// and the termination message's source). And per run in the CRI log format that kubelet
// reads (one entry a line: "<RFC3339Nano time> <stdout|stderr> <F|P> <content>", P for the
// part of a line longer than 16 KiB or cut by the end of the run), in
// logs/<container>/<restartCount>.log; the current run's file and the previous run's are
// kept, as kubelet keeps them. The kubelet API's containerLogs serves these (kubeletserver.go).

// maxLogEntry is the longest content of one entry; a longer line is split into partial ones.
const maxLogEntry = 16 * 1024

// runLog is one run's CRI-format log.
type runLog struct {
	path string

	mu     sync.Mutex
	f      *os.File
	wake   chan struct{} // closed and replaced on every entry written
	done   bool          // the run ended and everything it wrote is in the file
	stdout *runLogStream
	stderr *runLogStream
}

// runLogStream splits one output stream of a run into entries.
type runLogStream struct {
	l      *runLog
	stream string
	buf    []byte
}

// openRunLog creates the log of the run about to start (numbered by the restart count).
func (r *podRunner) openRunLog(c *container) (*runLog, error) {
	c.mu.Lock()
	n := c.restartCount
	c.mu.Unlock()
	dir := filepath.Join(r.dir, "logs", c.spec.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, strconv.Itoa(int(n))+".log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := &runLog{path: path, f: f, wake: make(chan struct{})}
	l.stdout = &runLogStream{l: l, stream: "stdout"}
	l.stderr = &runLogStream{l: l, stream: "stderr"}
	return l, nil
}

// writers are the run's stdout and stderr: each goes to raw (the all-runs log), to its own
// line-prefixed copy of the cluster log, and to this run's entries.
func (l *runLog) writers(raw io.Writer, clusterLog io.Writer, name string) (stdout, stderr io.Writer) {
	return io.MultiWriter(raw, prefixed(clusterLog, name), l.stdout),
		io.MultiWriter(raw, prefixed(clusterLog, name), l.stderr)
}

func (s *runLogStream) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		s.l.entry(s.stream, 'F', s.buf[:i])
		s.buf = s.buf[i+1:]
	}
	for len(s.buf) >= maxLogEntry {
		s.l.entry(s.stream, 'P', s.buf[:maxLogEntry])
		s.buf = s.buf[maxLogEntry:]
	}
	if len(s.buf) == 0 {
		s.buf = nil
	}
	return len(p), nil
}

func (l *runLog) entry(stream string, tag byte, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	line := make([]byte, 0, len(content)+48)
	line = time.Now().UTC().AppendFormat(line, time.RFC3339Nano)
	line = append(line, ' ')
	line = append(line, stream...)
	line = append(line, ' ', tag, ' ')
	line = append(line, content...)
	line = append(line, '\n')
	_, _ = l.f.Write(line)
	close(l.wake)
	l.wake = make(chan struct{})
}

// close ends the run's log once its process has exited and its output was copied: what is
// left of an unfinished line becomes a partial entry.
func (l *runLog) close() {
	for _, s := range []*runLogStream{l.stdout, l.stderr} {
		if len(s.buf) > 0 {
			l.entry(s.stream, 'P', s.buf)
			s.buf = nil
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	l.done = true
	close(l.wake)
	l.wake = make(chan struct{})
}

// discard removes the log of a run that did not start.
func (l *runLog) discard() {
	l.close()
	_ = os.Remove(l.path)
}

// keepRun records a started run's log as the container's current one; the log before the
// previous one is removed.
func (c *container) keepRun(l *runLog) {
	c.mu.Lock()
	c.runs = append(c.runs, l)
	var drop []*runLog
	if len(c.runs) > 2 {
		drop = c.runs[:len(c.runs)-2]
		c.runs = append([]*runLog(nil), c.runs[len(c.runs)-2:]...)
	}
	c.mu.Unlock()
	for _, d := range drop {
		_ = os.Remove(d.path)
	}
}

// runFor is the run whose log a request asks for, with kubelet's errors: the current (most
// recent) run, or the one before it.
func (c *container) runFor(pod string, previous bool) (*runLog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if previous {
		if len(c.runs) < 2 {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", c.spec.Name, pod)
		}
		return c.runs[len(c.runs)-2], nil
	}
	if len(c.runs) == 0 {
		reason := "ContainerCreating"
		if c.state.Waiting != nil && c.state.Waiting.Reason != "" {
			reason = c.state.Waiting.Reason
		}
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: %s", c.spec.Name, pod, reason)
	}
	return c.runs[len(c.runs)-1], nil
}

// logTimeFormat is how kubelet prints a line's time with timestamps=true.
const logTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// serve writes the run's log as kubelet's containerLogs does for opts: entries of the wanted
// streams (stdout and stderr to their writers; a nil writer skips that stream) since
// SinceSeconds/SinceTime, the last TailLines of them, at most LimitBytes, with Timestamps,
// and with Follow until the run ends, ctx ends or a write fails. flush runs after each batch.
func (l *runLog) serve(ctx context.Context, opts *corev1.PodLogOptions, stdout, stderr io.Writer, flush func()) error {
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var since time.Time
	if opts.SinceSeconds != nil {
		since = time.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if opts.SinceTime != nil {
		since = opts.SinceTime.Time
	}
	limit := int64(-1)
	if opts.LimitBytes != nil {
		limit = *opts.LimitBytes
	}
	// emit writes one entry; false once the byte limit is reached.
	emit := func(line []byte) (bool, error) {
		ts, stream, tag, content, ok := parseLogEntry(line)
		if !ok || (!since.IsZero() && ts.Before(since)) {
			return true, nil
		}
		w := stdout
		if stream == "stderr" {
			w = stderr
		}
		if w == nil {
			return true, nil
		}
		var out []byte
		if opts.Timestamps {
			out = append(ts.AppendFormat(out, logTimeFormat), ' ')
		}
		out = append(out, content...)
		if tag == 'F' {
			out = append(out, '\n')
		}
		more := true
		if limit >= 0 {
			if int64(len(out)) >= limit {
				out, more = out[:limit], false
			}
			limit -= int64(len(out))
		}
		if _, err := w.Write(out); err != nil {
			return false, err
		}
		return more, nil
	}
	var pending []byte
	// read takes what was written since the last read, complete lines only.
	read := func() ([][]byte, error) {
		data, err := io.ReadAll(f)
		if err != nil {
			return nil, err
		}
		pending = append(pending, data...)
		end := bytes.LastIndexByte(pending, '\n')
		if end < 0 {
			return nil, nil
		}
		lines := bytes.Split(pending[:end], []byte{'\n'})
		pending = append([]byte(nil), pending[end+1:]...)
		return lines, nil
	}
	l.mu.Lock()
	wake, done := l.wake, l.done
	l.mu.Unlock()
	lines, err := read()
	if err != nil {
		return err
	}
	if opts.TailLines != nil && int64(len(lines)) > *opts.TailLines {
		lines = lines[int64(len(lines))-*opts.TailLines:]
	}
	for {
		for _, line := range lines {
			more, err := emit(line)
			if err != nil {
				return err
			}
			if !more {
				flush()
				return nil
			}
		}
		flush()
		if !opts.Follow || done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		l.mu.Lock()
		wake, done = l.wake, l.done
		l.mu.Unlock()
		if lines, err = read(); err != nil {
			return err
		}
	}
}

// parseLogEntry splits a CRI log line.
func parseLogEntry(line []byte) (ts time.Time, stream string, tag byte, content []byte, ok bool) {
	parts := bytes.SplitN(line, []byte{' '}, 4)
	if len(parts) < 3 || len(parts[2]) != 1 {
		return ts, "", 0, nil, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(parts[0]))
	if err != nil {
		return ts, "", 0, nil, false
	}
	if len(parts) == 4 {
		content = parts[3]
	}
	return ts, string(parts[1]), parts[2][0], content, true
}
