//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package upstream

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection is still open: a peek that does
// not wait finds nothing to read. End of stream (the upstream closed it),
// an error or unexpected bytes (nothing is due on an idle connection) mean
// it must not be reused.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait for readiness
	})
	return err == nil && ok
}
