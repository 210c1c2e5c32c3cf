package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// DefaultMaxEventBytes is the event size limit used when NewReader is given a non-positive limit.
const DefaultMaxEventBytes = 16 << 20

// LineOverhead is how many bytes longer than the event limit a single line may be (room for "data: ").
const LineOverhead = 64

// ContentType is the media type of an SSE stream.
const ContentType = "text/event-stream"

const (
	// readBufferSize is the bufio buffer size; lines longer than this are
	// assembled in Reader.line, shorter ones are parsed in place.
	readBufferSize = 4 << 10
	// shrinkThreshold: scratch buffers that grew beyond this are dropped
	// after use so an idle connection does not pin a huge allocation.
	shrinkThreshold = 1 << 20
)

var (
	// ErrEventTooLarge reports that a line or an event's data exceeded the Reader's limit.
	ErrEventTooLarge = errors.New("sse: event too large")
	// ErrInvalidEvent reports that the Writer was asked to write something SSE cannot represent.
	ErrInvalidEvent = errors.New("sse: invalid event")
)

// Event is one SSE event.
type Event struct {
	Type  string // "event:" field; "" means the default "message"
	Data  []byte // "data:" lines joined with "\n"
	ID    string // "id:" field as received ("" if none in this event)
	Retry int    // "retry:" milliseconds, 0 if absent
}

// scanState caches the result of searching the buffered input for one
// delimiter byte, so that a stream using only CR (or only LF) line endings
// does not rescan the whole buffer for the other delimiter on every line.
// Offsets are relative to the bufio read position, which is stable across
// bufio refills (unread bytes are preserved in order).
type scanState struct {
	off   int  // found: offset of the delimiter; !found: bytes known not to contain it
	found bool // whether off is the position of a delimiter
}

// find returns the offset of c in buf[:limit], or -1.
func (s *scanState) find(buf []byte, c byte, limit int) int {
	if s.found {
		if s.off < limit {
			return s.off
		}
		return -1
	}
	if s.off >= limit {
		return -1
	}
	if i := bytes.IndexByte(buf[s.off:limit], c); i >= 0 {
		s.off += i
		s.found = true
		return s.off
	}
	s.off = limit
	return -1
}

// consume adjusts the state after n bytes were discarded from the front.
func (s *scanState) consume(n int) {
	s.off -= n
	if s.off < 0 {
		// Either nothing is known about the remaining bytes, or the
		// delimiter itself was consumed (the LF of a split CRLF).
		s.off = 0
		s.found = false
	}
}

// Reader reads events from an io.Reader.
//
// A Reader is not safe for concurrent use. Errors are sticky: once Next
// returns an error (including io.EOF), every later call returns it again.
type Reader struct {
	br      *bufio.Reader
	max     int // limit on len(Event.Data)
	maxLine int // limit on one line, excluding its terminator

	lf, cr  scanState
	skipLF  bool // the previous line ended in CR; a following LF belongs to it
	started bool // BOM check done
	err     error

	line []byte // scratch for lines that span bufio refills

	// Per-event buffers (WHATWG "data buffer", "event type buffer").
	data    []byte
	hasData bool // at least one data field seen (data buffer non-empty)
	typ     []byte
	idSeen  bool
	retry   int

	// Stream state.
	idBuf    []byte // WHATWG "last event ID buffer"
	lastID   string // WHATWG "last event ID string" (set at dispatch)
	typStr   string // cache of the last returned Type, to avoid re-allocating it
	reconn   int
	hasRetry bool
	comments int64
}

// NewReader returns a Reader that parses an event stream from r, limiting each event's data to maxEventBytes (<=0 means DefaultMaxEventBytes).
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	maxLine := maxEventBytes + LineOverhead
	if maxLine < maxEventBytes { // overflow
		maxLine = math.MaxInt
	}
	return &Reader{
		br:      bufio.NewReaderSize(r, readBufferSize),
		max:     maxEventBytes,
		maxLine: maxLine,
	}
}

// maxKeptScratch bounds the scratch space (the line and data buffers) a
// Reset keeps for the next stream; larger buffers are dropped.
const maxKeptScratch = 64 << 10

// Reset makes r read a new stream from src, as a Reader NewReader returned
// with r's limit would: every event, ID and error state is forgotten. The
// read buffer and the scratch space (when it is not larger than 64 KiB) are
// kept, so a caller reading many short streams, one after another, can keep
// a few Readers and not allocate them again for each stream. Reset(nil)
// lets go of the old stream.
func (r *Reader) Reset(src io.Reader) {
	line, data, typ := r.line[:0], r.data[:0], r.typ[:0]
	if cap(line) > maxKeptScratch {
		line = nil
	}
	if cap(data) > maxKeptScratch {
		data = nil
	}
	r.br.Reset(src)
	*r = Reader{br: r.br, max: r.max, maxLine: r.maxLine, line: line, data: data, typ: typ, idBuf: r.idBuf[:0]}
}

// LastEventID returns the last event ID seen; per the spec it persists across events and is updated when an event block ends.
func (r *Reader) LastEventID() string { return r.lastID }

// Next returns the next dispatched event, io.EOF at the end of the stream, or an error (sticky).
func (r *Reader) Next() (Event, error) {
	return r.next(false)
}

// NextShared is Next, except that the event's Data is the Reader's own
// scratch space, not a copy: it is valid only until the next call of Next,
// NextShared or Reset, which write over it. A caller that keeps the data
// beyond that copies it; one that only looks (compares, scans) is spared
// the copy.
func (r *Reader) NextShared() (Event, error) {
	return r.next(true)
}

// next is Next, with the event's Data shared (see NextShared) or a copy.
func (r *Reader) next(shared bool) (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	if !r.started {
		r.started = true
		if err := r.skipBOM(); err != nil {
			return Event{}, r.fail(err)
		}
	}
	for {
		line, err := r.readLine()
		if err != nil {
			// At EOF any pending, unterminated event is discarded (spec).
			return Event{}, r.fail(err)
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(shared); ok {
				return ev, nil
			}
			continue
		}
		if err := r.processLine(line); err != nil {
			return Event{}, r.fail(err)
		}
	}
}

// fail records err as the sticky error, wrapping I/O errors with context.
func (r *Reader) fail(err error) error {
	switch {
	case err == io.EOF, errors.Is(err, ErrEventTooLarge):
	default:
		err = fmt.Errorf("sse: reading event stream: %w", err)
	}
	r.err = err
	r.release()
	return err
}

// release drops per-event scratch space once the Reader is finished.
func (r *Reader) release() {
	r.line, r.data, r.typ = nil, nil, nil
}

// skipBOM discards a UTF-8 byte order mark at the start of the stream. It
// peeks one byte at a time so that it never waits for bytes that the first
// line would not need anyway.
func (r *Reader) skipBOM() error {
	const bom = "\xef\xbb\xbf"
	for i := range len(bom) {
		b, err := r.br.Peek(i + 1)
		if len(b) <= i {
			// The stream ended (or failed) inside a BOM prefix; no
			// complete line can follow.
			return err
		}
		if b[i] != bom[i] {
			return nil
		}
	}
	r.discard(len(bom))
	return nil
}

// discard drops n buffered bytes and updates the delimiter scan caches.
func (r *Reader) discard(n int) {
	_, _ = r.br.Discard(n) // n <= Buffered(), cannot fail
	r.lf.consume(n)
	r.cr.consume(n)
}

// readLine returns the next line without its terminator. The result aliases
// either the bufio buffer or r.line and is valid until the next read.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	for {
		if r.br.Buffered() == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, err
			}
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			// Resolved lazily, so that a CR-terminated event is returned
			// without waiting to see whether an LF follows.
			r.skipLF = false
			if buf[0] == '\n' {
				r.discard(1)
				continue
			}
		}
		end := r.lf.find(buf, '\n', len(buf))
		limit := end
		if limit < 0 {
			limit = len(buf)
		}
		if i := r.cr.find(buf, '\r', limit); i >= 0 {
			end = i
		}
		if end < 0 {
			if len(r.line)+len(buf) > r.maxLine {
				return nil, fmt.Errorf("%w: line longer than %d bytes", ErrEventTooLarge, r.maxLine)
			}
			r.line = append(r.line, buf...)
			r.discard(len(buf))
			continue
		}
		if len(r.line)+end > r.maxLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrEventTooLarge, r.maxLine)
		}
		line := buf[:end]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		r.skipLF = buf[end] == '\r'
		// Discard only advances the read index; buf stays valid until
		// the next Peek.
		r.discard(end + 1)
		if cap(r.line) > shrinkThreshold {
			// line aliases the old array, which stays alive until the
			// caller is done with it; just stop retaining it here.
			r.line = nil
		}
		return line, nil
	}
}

// processLine interprets one non-empty line.
func (r *Reader) processLine(line []byte) error {
	if line[0] == ':' {
		r.comments++
		return nil
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		r.typ = append(r.typ[:0], value...)
	case "data":
		n := len(r.data) + len(value)
		if r.hasData {
			n++
		}
		if n > r.max {
			return fmt.Errorf("%w: event data longer than %d bytes", ErrEventTooLarge, r.max)
		}
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.idBuf = append(r.idBuf[:0], value...)
			r.idSeen = true
		}
	case "retry":
		if ms, ok := parseRetry(value); ok {
			r.retry = ms
			r.reconn, r.hasRetry = ms, true
		}
	}
	return nil
}

// parseRetry parses a non-empty all-ASCII-digit value, saturating at MaxInt32.
func parseRetry(v []byte) (int, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= math.MaxInt32 {
			n = n*10 + int64(c-'0')
		}
	}
	return int(min(n, math.MaxInt32)), true
}

// dispatch ends the current event block. It reports false when the block
// had no data field, in which case only the last event ID is updated. The
// event's Data is r.data itself when shared, else a copy.
func (r *Reader) dispatch(shared bool) (Event, bool) {
	if string(r.idBuf) != r.lastID {
		r.lastID = string(r.idBuf)
	}
	var ev Event
	ok := r.hasData
	if ok {
		if shared {
			ev.Data = r.data[:len(r.data):len(r.data)]
		} else {
			ev.Data = make([]byte, len(r.data))
			copy(ev.Data, r.data)
		}
		if len(r.typ) > 0 {
			if string(r.typ) != r.typStr {
				r.typStr = string(r.typ)
			}
			ev.Type = r.typStr
		}
		if r.idSeen {
			ev.ID = r.lastID
		}
		ev.Retry = r.retry
	}
	r.data, r.typ = r.data[:0], r.typ[:0]
	if cap(r.data) > shrinkThreshold {
		r.data = nil
	}
	r.hasData, r.idSeen, r.retry = false, false, 0
	return ev, ok
}
