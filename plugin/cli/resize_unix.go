//go:build !windows

package cli

import (
	"os"
	"os/signal"
	"syscall"
)

// resized signals each change of the terminal's size (SIGWINCH) until stop is called.
func resized() (<-chan struct{}, func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	c, done := make(chan struct{}, 1), make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}()
	return c, func() { signal.Stop(sig); close(done) }
}
