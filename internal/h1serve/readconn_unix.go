//go:build unix

package h1serve

import (
	"io"
	"os"
	"syscall"
)

// readConn reads from the connection into the buffer. On a connection
// with a file descriptor and an empty buffer it waits for the connection
// to be readable holding no buffer: the buffer is taken from the pool in
// the read itself and given back whenever the read finds nothing.
func (rd *reader) readConn() (int, error) {
	c := rd.c
	if c.raw == nil || rd.r != rd.w {
		rd.acquire()
		return c.nc.Read(rd.buf[rd.w:])
	}
	var n int
	var serr error
	err := c.raw.Read(func(fd uintptr) bool {
		rd.acquire()
		for {
			n, serr = syscall.Read(int(fd), rd.buf[rd.w:])
			if serr != syscall.EINTR {
				break
			}
		}
		if serr == syscall.EAGAIN {
			rd.release()
			return false
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case serr != nil:
		return 0, os.NewSyscallError("read", serr)
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
}
