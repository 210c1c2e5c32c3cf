package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Writer writes events to an io.Writer, flushing after each one.
//
// A Writer is safe for concurrent use (e.g. a keepalive goroutine writing
// comments while another goroutine writes events): each event or comment is
// emitted with a single Write call under a mutex. After a write or flush
// error every later call returns that error.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	flush func() error // nil if w cannot be flushed
	buf   []byte
	lean  bool // let buf go after each write (Lean)
	err   error
}

// NewWriter returns a Writer on w; if w is an http.ResponseWriter (flushed via http.ResponseController) or has a Flush method, it is flushed after every event.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, flush: flusherFor(w)}
}

// Lean makes w let go of its encoding buffer after every event and
// comment, for a long-lived stream whose writes are rare (a held listen,
// a session's GET stream): it then holds no buffer between them, at the
// cost of one allocation per write. Call it before the first write.
func (w *Writer) Lean() { w.lean = true }

// flusherFor picks the flush function for w.
func flusherFor(w io.Writer) func() error {
	switch f := w.(type) {
	case http.ResponseWriter:
		// ResponseController also finds Flush through Unwrap chains of
		// middleware-wrapped ResponseWriters.
		rc := http.NewResponseController(f)
		return func() error {
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
			return nil
		}
	case interface{ Flush() error }:
		return f.Flush
	case http.Flusher:
		return func() error { f.Flush(); return nil }
	}
	return nil
}

// SetHeaders sets the response headers an SSE stream needs (Content-Type, Cache-Control, X-Accel-Buffering).
func SetHeaders(h http.Header) {
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // keep nginx-style proxies from buffering the stream
}

// ValidateEvent reports whether e can be written as SSE without being misparsed (wrapping ErrInvalidEvent).
func ValidateEvent(e Event) error {
	if strings.ContainsAny(e.Type, "\r\n") {
		return fmt.Errorf("%w: event type contains CR or LF", ErrInvalidEvent)
	}
	if strings.ContainsAny(e.ID, "\r\n\x00") {
		return fmt.Errorf("%w: event id contains CR, LF or NUL", ErrInvalidEvent)
	}
	if e.Retry < 0 {
		return fmt.Errorf("%w: negative retry %d", ErrInvalidEvent, e.Retry)
	}
	return nil
}

// WriteEvent writes e as one SSE event (Data split into data: lines on \n, \r\n and \r) and flushes.
//
// At least one data line is always written, so every event written is
// dispatched by a conforming reader, even with empty Data (this is how an
// MCP "priming" event, an id with empty data, is produced). An empty ID or
// Type, or a zero Retry, is omitted.
func (w *Writer) WriteEvent(e Event) error {
	if err := ValidateEvent(e); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if w.lean {
		// One allocation of the event's size (one data line, the
		// usual case), not a buffer grown from nothing.
		b = make([]byte, 0, len(e.Data)+len(e.Type)+len(e.ID)+48)
	}
	if e.Type != "" {
		b = appendField(b, "event", e.Type)
	}
	if e.ID != "" {
		b = appendField(b, "id", e.ID)
	}
	if e.Retry > 0 {
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, int64(e.Retry), 10)
		b = append(b, '\n')
	}
	data := e.Data
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			b = appendField(b, "data", data)
			break
		}
		b = appendField(b, "data", data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, '\n')
	w.buf = b
	if w.lean || cap(w.buf) > shrinkThreshold {
		defer func() { w.buf = nil }()
	}
	return w.emit(b)
}

// WriteComment writes the comment ": text" followed by a blank line (a keepalive) and flushes; text must not contain CR or LF.
func (w *Writer) WriteComment(text string) error {
	if strings.ContainsAny(text, "\r\n") {
		return fmt.Errorf("%w: comment contains CR or LF", ErrInvalidEvent)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	b := append(w.buf[:0], ':')
	if text != "" {
		b = append(b, ' ')
		b = append(b, text...)
	}
	b = append(b, "\n\n"...)
	w.buf = b
	if w.lean {
		defer func() { w.buf = nil }()
	}
	return w.emit(b)
}

// emit writes b and flushes; w.mu must be held.
func (w *Writer) emit(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("sse: writing event: %w", err)
		return w.err
	}
	if w.flush != nil {
		if err := w.flush(); err != nil {
			w.err = fmt.Errorf("sse: flushing event: %w", err)
			return w.err
		}
	}
	return nil
}

// appendField appends "name: value\n", or "name:\n" for an empty value. The
// space is always written for non-empty values so that a value which itself
// starts with a space survives the reader's stripping of one space.
func appendField[T string | []byte](b []byte, name string, value T) []byte {
	b = append(b, name...)
	b = append(b, ':')
	if len(value) > 0 {
		b = append(b, ' ')
		b = append(b, value...)
	}
	return append(b, '\n')
}
