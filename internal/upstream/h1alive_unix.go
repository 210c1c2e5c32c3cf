//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package upstream

import (
	"net"
	"syscall"
)

// aliveCheck is an idle connection's liveness check, made once per
// connection (the raw connection and the peek function were an allocation
// each per check).
type aliveCheck struct {
	rc   syscall.RawConn // nil: the connection has no descriptor to peek at
	bad  bool            // its descriptor could not be had: never reused
	ok   bool            // the last peek's verdict
	peek func(fd uintptr) bool
	buf  [1]byte
}

func newAliveCheck(c net.Conn) *aliveCheck {
	a := &aliveCheck{}
	if sc, ok := c.(syscall.Conn); ok {
		rc, err := sc.SyscallConn()
		a.rc, a.bad = rc, err != nil
	}
	a.peek = func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), a.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		a.ok = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true // never wait for readiness
	}
	return a
}

// alive reports whether an idle connection is still open: a peek that does
// not wait finds nothing to read. End of stream (the upstream closed it),
// an error or unexpected bytes (nothing is due on an idle connection) mean
// it must not be reused. A connection without a descriptor is taken as
// open. It is called only by the one goroutine that took the connection.
func (a *aliveCheck) alive() bool {
	if a.rc == nil {
		return !a.bad
	}
	a.ok = false
	err := a.rc.Read(a.peek)
	return err == nil && a.ok
}
