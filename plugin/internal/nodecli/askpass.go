package nodecli

import (
	"bytes"
	"context"
	"io"
	"sync"
)

// prompt is what valkey-cli --askpass writes before it reads the password (Valkey 7.2 to 9).
const prompt = "Please input password: "

// promptFilter passes a terminal's output on, but for valkey-cli's password prompt and the
// line it is answered on (the mask, or the password itself on a terminal valkey-cli
// considers dumb), and says when the prompt was seen.
type promptFilter struct {
	w     io.Writer
	asked chan struct{}

	mu    sync.Mutex
	state int // looking for the prompt, then swallowing its line, then passing through
	held  []byte
}

const (
	lookingForPrompt = iota
	swallowingAnswer
	passing
)

func newPromptFilter(w io.Writer) *promptFilter {
	return &promptFilter{w: w, asked: make(chan struct{})}
}

func (f *promptFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(p)
	if f.state == lookingForPrompt {
		f.held = append(f.held, p...)
		i := bytes.Index(f.held, []byte(prompt))
		if i < 0 {
			// What cannot be the start of the prompt goes out now.
			keep := min(len(f.held), len(prompt)-1)
			out := f.held[:len(f.held)-keep]
			f.held = append([]byte(nil), f.held[len(f.held)-keep:]...)
			_, err := f.w.Write(out)
			return n, err
		}
		if _, err := f.w.Write(f.held[:i]); err != nil {
			return n, err
		}
		p = f.held[i+len(prompt):]
		f.held = nil
		f.state = swallowingAnswer
		close(f.asked)
	}
	if f.state == swallowingAnswer {
		j := bytes.IndexByte(p, '\n')
		if j < 0 {
			return n, nil
		}
		p = p[j+1:]
		f.state = passing
	}
	_, err := f.w.Write(p)
	return n, err
}

// flush writes what was held back while looking for a prompt that never came (valkey-cli
// failed before asking).
func (f *promptFilter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == lookingForPrompt && len(f.held) > 0 {
		_, _ = f.w.Write(f.held)
		f.held = nil
	}
}

// afterPrompt is a terminal session's input: nothing until valkey-cli asks for the
// password, then the password, then the user's input.
type afterPrompt struct {
	ctx      context.Context
	asked    <-chan struct{}
	password string
	sent     bool
	rest     io.Reader
}

func (a *afterPrompt) Read(p []byte) (int, error) {
	if !a.sent {
		select {
		case <-a.asked:
		case <-a.ctx.Done():
			return 0, io.EOF
		}
		if len(p) < len(a.password) {
			return 0, io.ErrShortBuffer
		}
		a.sent = true
		return copy(p, a.password), nil
	}
	if a.rest == nil {
		<-a.ctx.Done()
		return 0, io.EOF
	}
	return a.rest.Read(p)
}
