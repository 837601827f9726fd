//go:build windows

package cli

import "time"

// resized signals every 250 ms until stop is called: Windows has no SIGWINCH, so the size is
// polled (as kubectl does there), and sizes sends only a size that changed.
func resized() (<-chan struct{}, func()) {
	c, done := make(chan struct{}, 1), make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				select {
				case c <- struct{}{}:
				default:
				}
			}
		}
	}()
	return c, func() { close(done) }
}
