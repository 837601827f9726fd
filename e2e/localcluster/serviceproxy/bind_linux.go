package serviceproxy

import "syscall"

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT from linux/in.h (not in package syscall).
const ipBindAddressNoPort = 24

// bindAddressNoPort makes a dial that binds a local address choose the local port at
// connect time, by the whole 4-tuple. Without it bind(2) reserves a port for the address
// alone, and a busy client address (127.0.0.1) could run out of ports under connection churn.
func bindAddressNoPort(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	}); err != nil {
		return err
	}
	return serr
}
