package confirm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// ErrNoTerminal is the refusal when nobody can be asked: stdin is not a terminal and --yes
// was not given.
var ErrNoTerminal = errors.New("standard input is not a terminal, so nobody can confirm: pass --yes to go on without asking")

// Typed returns nil when yes is set, or when the person at the terminal on in types want
// (the prompt is written to out). Anything else typed, or the end of input, is a refusal
// that says nothing was changed.
func Typed(in io.Reader, out io.Writer, want string, yes bool) error {
	if yes {
		return nil
	}
	if !IsTerminal(in) {
		return ErrNoTerminal
	}
	if _, err := fmt.Fprintf(out, "Type the cluster's name (%s) to go on, anything else to stop: ", want); err != nil {
		return err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if got := strings.TrimSpace(line); got != want {
		return fmt.Errorf("not confirmed (typed %q, not %q): nothing was changed", got, want)
	}
	return nil
}

// IsTerminal says whether in is a terminal a person types on.
func IsTerminal(in io.Reader) bool {
	f, ok := in.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
