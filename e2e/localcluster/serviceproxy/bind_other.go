//go:build !linux

package serviceproxy

import "syscall"

// bindAddressNoPort is a Linux socket option; elsewhere dials bind ports the classic way.
func bindAddressNoPort(_, _ string, _ syscall.RawConn) error { return nil }
