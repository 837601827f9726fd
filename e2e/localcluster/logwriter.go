package localcluster

import (
	"bytes"
	"io"
	"sync"
)

// prefixed returns a writer that prefixes each line with "[name] " before passing it on.
func prefixed(w io.Writer, name string) io.Writer {
	if w == io.Discard {
		return io.Discard
	}
	return &linePrefixer{w: w, prefix: []byte("[" + name + "] ")}
}

type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	buf    []byte
}

func (l *linePrefixer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, l.prefix...), l.buf[:i+1]...)
		if _, err := l.w.Write(line); err != nil {
			return len(p), err
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}
