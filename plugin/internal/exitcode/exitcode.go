// Package exitcode carries a verb's exit status out of cobra: a verb that prints its own
// diagnostics (simulate, replay) returns a Code, and main exits with it without printing
// anything more.
package exitcode

import "fmt"

// Code is a non-zero exit status a verb asks for.
type Code int

func (c Code) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// Of is err for an exit status: nil for 0, else a Code.
func Of(status int) error {
	if status == 0 {
		return nil
	}
	return Code(status)
}
