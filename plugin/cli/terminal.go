package cli

import (
	"context"
	"os"

	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"
)

// terminal is the user's terminal while a session runs on the pod's: raw, so that keys
// (Ctrl-C, arrows, Tab) reach valkey-cli's line editor rather than this process.
type terminal struct {
	in, out *os.File
	old     *term.State
}

// terminalOf is the terminal stdin is, or nil when stdin is not one (a pipe, a file): the
// session then runs without a terminal, as valkey-cli does with piped input.
func terminalOf(stdin, stdout any) *terminal {
	in, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return nil
	}
	out, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(int(out.Fd())) {
		out = in
	}
	return &terminal{in: in, out: out}
}

func (t *terminal) makeRaw() error {
	old, err := term.MakeRaw(int(t.in.Fd()))
	t.old = old
	return err
}

func (t *terminal) restore() {
	if t.old != nil {
		_ = term.Restore(int(t.in.Fd()), t.old)
	}
}

// sizes sends the terminal's size, then each new size (resized: SIGWINCH, or polling where
// there is no such signal), until ctx ends.
func (t *terminal) sizes(ctx context.Context) remotecommand.TerminalSizeQueue {
	q := &sizeQueue{c: make(chan remotecommand.TerminalSize, 1)}
	winch, stop := resized()
	var last remotecommand.TerminalSize
	send := func() {
		w, h, err := term.GetSize(int(t.out.Fd()))
		if err != nil {
			return
		}
		size := remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
		if size == last {
			return
		}
		last = size
		// A size not read yet is stale: the latest replaces it (this goroutine is the only
		// sender, so the send cannot block).
		select {
		case <-q.c:
		default:
		}
		q.c <- size
	}
	send()
	go func() {
		defer stop()
		defer close(q.c)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				send()
			}
		}
	}()
	return q
}

type sizeQueue struct {
	c chan remotecommand.TerminalSize
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q.c
	if !ok {
		return nil
	}
	return &s
}
