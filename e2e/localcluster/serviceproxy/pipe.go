package serviceproxy

import (
	"io"
	"net"
)

// pipe copies both ways until both directions are done. A clean end of one direction is
// passed on as a half-close (clients that shut down their write side still get the answer);
// an error in either direction resets both connections, as the kernel would for a NATed
// connection whose peer vanished. io.Copy between two TCP connections uses splice(2), so
// bytes do not pass through user space.
func pipe(client, backend *net.TCPConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		forward(backend, client)
	}()
	forward(client, backend)
	<-done
}

func forward(dst, src *net.TCPConn) {
	if _, err := io.Copy(dst, src); err != nil {
		reset(dst)
		reset(src)
		return
	}
	_ = dst.CloseWrite()
}
