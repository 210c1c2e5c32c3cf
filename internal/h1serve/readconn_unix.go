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
	if rd.rawRead == nil {
		rd.rawRead = rd.readFD // made once: a method value passed on each read would allocate
	}
	rd.n, rd.serr = 0, nil
	err := c.raw.Read(rd.rawRead)
	switch {
	case err != nil:
		return 0, err
	case rd.serr != nil:
		return 0, os.NewSyscallError("read", rd.serr)
	case rd.n <= 0:
		return 0, io.EOF
	}
	return rd.n, nil
}

// readFD reads from fd into the buffer, taken from the pool for the read;
// it gives the buffer back and asks to wait when nothing is there.
func (rd *reader) readFD(fd uintptr) bool {
	rd.acquire()
	for {
		rd.n, rd.serr = syscall.Read(int(fd), rd.buf[rd.w:])
		if rd.serr != syscall.EINTR {
			break
		}
	}
	if rd.serr == syscall.EAGAIN {
		rd.release()
		return false
	}
	return true
}
