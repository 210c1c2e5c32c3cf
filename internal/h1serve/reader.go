package h1serve

import (
	"bytes"
	"errors"
)

var (
	errHeadTooLarge = errors.New("request head too large")
	errLineTooLong  = errors.New("chunked body line too long")
)

// reader is a connection's read buffer. Its buffer comes from the
// server's pool when bytes are to be read and goes back to it whenever it
// is empty and the connection waits (see readConn): an idle connection, or
// one whose handler streams a response, holds no buffer.
type reader struct {
	c    *conn
	bp   *[]byte // the pooled buffer, nil while none is held or buf was grown
	buf  []byte
	r, w int // buf[r:w] is buffered

	// A raw read's results (readconn_unix.go).
	rawRead func(fd uintptr) bool
	n       int
	serr    error
}

func (rd *reader) buffered() int { return rd.w - rd.r }

// acquire makes sure a buffer is held.
func (rd *reader) acquire() {
	if rd.buf == nil {
		rd.bp = rd.c.s.getRBuf()
		rd.buf = *rd.bp
		rd.r, rd.w = 0, 0
	}
}

// release gives the buffer back when nothing is buffered.
func (rd *reader) release() {
	if rd.buf == nil || rd.r != rd.w {
		return
	}
	if rd.bp != nil {
		rd.c.s.putRBuf(rd.bp)
	}
	rd.bp, rd.buf = nil, nil
	rd.r, rd.w = 0, 0
}

// fill reads at least one more byte, making room first; it fails with
// errHeadTooLarge when the buffer is full.
func (rd *reader) fill() error {
	if rd.buf != nil {
		if rd.r == rd.w {
			rd.r, rd.w = 0, 0
		} else if rd.w == len(rd.buf) && rd.r > 0 {
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		}
		if rd.w == len(rd.buf) {
			return errHeadTooLarge
		}
	}
	n, err := rd.readConn()
	rd.w += n
	if n > 0 {
		return nil
	}
	return err
}

// grow doubles the buffer (up to limit) for a head that does not fit.
func (rd *reader) grow(limit int) {
	nb := make([]byte, min(2*len(rd.buf), limit+1))
	rd.w = copy(nb, rd.buf[rd.r:rd.w])
	rd.r = 0
	if rd.bp != nil {
		rd.c.s.putRBuf(rd.bp)
		rd.bp = nil
	}
	rd.buf = nb
}

// read reads into p from the buffer, or from the connection when the
// buffer is empty (straight into p when p is large).
func (rd *reader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if rd.r == rd.w {
		if len(p) >= readBufSize {
			return rd.c.nc.Read(p)
		}
		if err := rd.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, rd.buf[rd.r:rd.w])
	rd.r += n
	return n, nil
}

// readLine returns the next line, its "\n" included, valid until the next
// read; a line longer than max fails.
func (rd *reader) readLine(max int) ([]byte, error) {
	for scanned := 0; ; {
		if rd.buf != nil {
			if i := bytes.IndexByte(rd.buf[rd.r+scanned:rd.w], '\n'); i >= 0 {
				line := rd.buf[rd.r : rd.r+scanned+i+1]
				rd.r += scanned + i + 1
				return line, nil
			}
			scanned = rd.w - rd.r
			if scanned >= max {
				return nil, errLineTooLong
			}
		}
		if err := rd.fill(); err != nil {
			if err == errHeadTooLarge {
				err = errLineTooLong
			}
			return nil, err
		}
	}
}

// unread puts b back in front of the buffer.
func (rd *reader) unread(b byte) {
	rd.acquire()
	if rd.r == 0 {
		if rd.w == len(rd.buf) {
			return // cannot happen: a byte was read from a connection with a buffer not full
		}
		copy(rd.buf[1:], rd.buf[:rd.w])
		rd.w++
		rd.r = 1
	}
	rd.r--
	rd.buf[rd.r] = b
}

// readHead returns the next request head: the request line and header
// lines, each ending in "\n", without the empty line that ends the head.
// It stays valid (and may be changed in place) until the next read. A head
// longer than limit fails with errHeadTooLarge.
func (rd *reader) readHead(limit int) ([]byte, error) {
	scanned := 0
	for {
		if rd.buf != nil {
			b := rd.buf[rd.r:rd.w]
			end, next, more := headEnd(b, scanned)
			if end >= 0 {
				rd.r += next
				return b[:end], nil
			}
			scanned = more
			if len(b) > limit {
				return nil, errHeadTooLarge
			}
			if rd.w == len(rd.buf) && rd.r == 0 {
				rd.grow(limit)
			}
		}
		if err := rd.fill(); err != nil { // offsets relative to rd.r survive its compaction
			return nil, err
		}
	}
}

// headEnd finds the empty line ending a head in b, scanning from from:
// end is the head's length (its last "\n" included), next the offset past
// the empty line; end is -1 when b holds no empty line yet, and more says
// where the next scan may start.
func headEnd(b []byte, from int) (end, next, more int) {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			break
		}
		k := i + j
		if k+1 >= len(b) {
			return -1, 0, k
		}
		if b[k+1] == '\n' {
			return k + 1, k + 2, 0
		}
		if b[k+1] == '\r' {
			if k+2 >= len(b) {
				return -1, 0, k
			}
			if b[k+2] == '\n' {
				return k + 1, k + 3, 0
			}
		}
		i = k + 1
	}
	return -1, 0, max(from, len(b)-1, 0)
}
