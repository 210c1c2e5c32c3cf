package h1serve

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

var (
	errChunked   = errors.New("malformed chunked encoding")
	errChunkSize = errors.New("chunk length too large")
	errExcess    = errors.New("chunked encoding contains too much non-data")
)

// body is a request body, framed by Content-Length or chunked.
type body struct {
	ex      *response
	chunked bool
	n       int64 // bytes left: of the body (Content-Length) or of the chunk
	inChunk bool  // a chunk's data was read: its "\r\n" comes next
	excess  int64 // chunked framing bytes beyond what its data justifies
	eof     bool
	closed  bool
	err     error
}

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	switch {
	case b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.eof:
		return 0, io.EOF
	case b.err != nil:
		return 0, b.err
	}
	ex := b.ex
	if ex.expectContinue && !ex.wroteContinue {
		ex.writeContinue()
	}
	var n int
	var err error
	if b.chunked {
		n, err = b.readChunked(p)
	} else {
		n, err = b.readLength(p)
	}
	if err == io.EOF {
		b.eof = true
		ex.c.rd.release()
		ex.c.bodyDone()
	} else if err != nil {
		b.err = err
	}
	return n, err
}

// Close implements io.Closer: later reads fail; the server reads what is
// left after the handler returns, or closes the connection.
func (b *body) Close() error {
	b.closed = true
	return nil
}

func (b *body) readLength(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.ex.c.rd.read(p)
	b.n -= int64(n)
	if b.n == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) readChunked(p []byte) (int, error) {
	rd := &b.ex.c.rd
	for b.n == 0 {
		if b.inChunk {
			line, err := rd.readLine(2)
			if err != nil {
				return 0, eofUnexpected(err)
			}
			if len(line) != 2 || line[0] != '\r' {
				return 0, errChunked
			}
			b.inChunk = false
		}
		line, err := rd.readLine(maxChunkLine)
		if err != nil {
			return 0, eofUnexpected(err)
		}
		b.excess += int64(len(line))
		size, err := chunkSize(line)
		if err != nil {
			return 0, err
		}
		b.excess -= 16 + 2*int64(size)
		b.excess = max(b.excess, 0)
		if b.excess > 16<<10 {
			return 0, errExcess
		}
		if size == 0 {
			return 0, b.readTrailer()
		}
		b.n = int64(size)
		b.inChunk = true
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := rd.read(p)
	b.n -= int64(n)
	return n, eofUnexpected(err)
}

// readTrailer reads the trailer lines after the last chunk, up to the
// empty line, and drops them; it returns io.EOF.
func (b *body) readTrailer() error {
	rd := &b.ex.c.rd
	total := 0
	for {
		line, err := rd.readLine(maxChunkLine)
		if err != nil {
			return eofUnexpected(err)
		}
		if len(line) < 2 || line[len(line)-2] != '\r' {
			return errChunked
		}
		if len(line) == 2 {
			return io.EOF
		}
		total += len(line)
		if total > b.ex.c.s.headLimit() || bytes.IndexByte(line, ':') <= 0 || !plainLine(line) {
			return errChunked
		}
	}
}

// chunkSize parses a chunk-size line: hex digits, optional extensions
// after ";", "\r\n".
func chunkSize(line []byte) (uint64, error) {
	if len(line) < 3 || !plainLine(line) {
		return 0, errChunked
	}
	line = line[:len(line)-2]
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = bytes.TrimRight(line[:i], " \t")
	}
	if len(line) == 0 {
		return 0, errChunked
	}
	if len(line) > 16 {
		return 0, errChunkSize
	}
	var n uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errChunked
		}
		n = n<<4 | uint64(c)
	}
	if n > 1<<62 {
		return 0, errChunkSize
	}
	return n, nil
}

// plainLine reports whether a chunked framing line (a chunk-size line or
// a trailer) ends in CRLF and holds no other control byte but HTAB: a bare
// CR, which a front proxy may read as a line end, is refused as net/http
// refuses it.
func plainLine(line []byte) bool {
	n := len(line)
	if n < 2 || line[n-2] != '\r' {
		return false
	}
	for _, c := range line[:n-2] {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func eofUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// discard reads what the handler left of the body, up to maxDiscard, and
// reports whether the body was read to its end.
func (b *body) discard() bool {
	if b.eof {
		return true
	}
	var buf [512]byte
	for total := 0; total <= maxDiscard; {
		n, err := b.Read(buf[:])
		total += n
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}
