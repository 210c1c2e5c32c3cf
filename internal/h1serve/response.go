package h1serve

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

var errAfterHandler = errors.New("h1serve: response written after its handler returned")

// response is one request and its response: the request's URL and body
// live in it, so that a request costs few allocations (its http.Request is
// the one copy WithContext makes: nothing here keeps it, so a handler that
// hands on a copy of its own, or a stream that keeps only part of it, does
// not hold it for the response's life). It is the
// handler's http.ResponseWriter, with Flush and the deadlines
// http.ResponseController uses.
type response struct {
	c    *conn
	url  url.URL
	body body
	hdr  http.Header // nil once committed: Header then makes a fresh one

	status      int
	wroteHeader bool
	committed   bool        // the header is in out or on the wire
	handlerDone atomic.Bool // set when the handler returned; a goroutine it left may still call in
	// wmu serialises the writing methods and finish: a goroutine the
	// handler left behind, or two goroutines writing at once (which
	// http.ResponseWriter does not allow), cannot make two responses share
	// a pooled buffer, nor write once the handler returned.
	wmu        sync.Mutex
	chunked    bool
	clen       int64 // the body's declared or computed length, -1 unknown
	written    int64 // body bytes the handler wrote
	out        *[]byte
	closeAfter bool
	bodyLeft   bool // the request body was not read to its end: the connection lingers, then closes
	isHEAD     bool
	is11       bool
	reqClose   bool          // the request asked to close the connection
	noBody     bool          // the request has no body (its Body is http.NoBody)
	ho         *heldResponse // the continuation the handler handed over (handoff.go); nil when none

	mu             sync.Mutex // the 100 Continue (written on a body read) against the header
	expectContinue bool
	wroteContinue  bool
}

// Header implements http.ResponseWriter. Once the header is committed,
// changes to it have no effect (as with net/http): the map sent is let go,
// so that a long response (a held stream) does not keep it, and a fresh
// one is made for a handler that still asks.
func (w *response) Header() http.Header {
	if w.hdr == nil {
		w.hdr = make(http.Header)
	}
	return w.hdr
}

// WriteHeader implements http.ResponseWriter.
func (w *response) WriteHeader(code int) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return
	}
	w.writeHeader(code)
}

// writeHeader is WriteHeader; w.wmu is held.
func (w *response) writeHeader(code int) {
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.wroteHeader {
		w.c.s.logf("h1serve: superfluous response.WriteHeader call (status %d)", code)
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.writeInterim(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.clen = -1
	if cl := w.hdr.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.clen = v
		} else {
			w.c.s.logf("h1serve: invalid Content-Length of %q", cl)
			w.hdr.Del("Content-Length")
		}
	}
}

// writeInterim writes a 1xx response with the header set so far.
func (w *response) writeInterim(code int) {
	if !w.is11 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if code == http.StatusContinue {
		if w.wroteContinue {
			return
		}
		w.wroteContinue = true
	}
	b := w.c.s.getWBuf()
	out := appendStatus(*b, true, code)
	out = appendHeader(out, w.hdr, nil)
	out = append(out, "\r\n"...)
	w.c.write(out)
	*b = out
	w.c.s.putWBuf(b)
}

// writeContinue answers "100 Continue" before the body's first read, if
// no response was started.
func (w *response) writeContinue() {
	w.mu.Lock()
	if w.wroteContinue || w.committed {
		w.mu.Unlock()
		return
	}
	w.wroteContinue = true
	w.mu.Unlock()
	w.c.write([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
}

// Write implements http.ResponseWriter.
func (w *response) Write(p []byte) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return 0, errAfterHandler
	}
	return w.write(p)
}

// write is Write; w.wmu is held.
func (w *response) write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.c.werr != nil {
		return 0, w.c.werr
	}
	if w.out == nil {
		w.out = w.c.s.getWBuf()
	}
	out := *w.out
	if !w.committed {
		if len(out)+len(p) <= cap(out) {
			*w.out = append(out, p...)
			return len(p), nil
		}
		w.commit(false)
		out = *w.out
	}
	if w.isHEAD {
		return len(p), nil
	}
	if w.chunked {
		if len(out)+len(p)+20 <= cap(out) {
			*w.out = appendChunk(out, p)
		} else {
			out = strconv.AppendUint(out, uint64(len(p)), 16)
			w.c.write(append(out, "\r\n"...))
			w.c.write(p)
			*w.out = append(out[:0], "\r\n"...)
		}
	} else if len(out)+len(p) <= cap(out) {
		*w.out = append(out, p...)
	} else {
		w.c.write(out)
		w.c.write(p)
		*w.out = out[:0]
	}
	if w.c.werr != nil {
		return 0, w.c.werr
	}
	return len(p), nil
}

// WriteString implements io.StringWriter.
func (w *response) WriteString(s string) (int, error) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return 0, errAfterHandler
	}
	if w.out != nil && !w.committed && len(*w.out)+len(s) <= cap(*w.out) && w.wroteHeader &&
		bodyAllowed(w.status) && (w.clen < 0 || w.written+int64(len(s)) <= w.clen) {
		*w.out = append(*w.out, s...)
		w.written += int64(len(s))
		return len(s), nil
	}
	return w.write([]byte(s))
}

// Flush sends the header and what was written so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush, with the error of the write (http.ResponseController
// uses it).
func (w *response) FlushError() error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return errAfterHandler
	}
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.committed {
		if w.out == nil {
			w.out = w.c.s.getWBuf()
		}
		w.commit(false)
	}
	w.flushOut()
	return w.c.werr
}

// flushOut writes out and gives its buffer back: a response stream
// holds no buffer between its events.
func (w *response) flushOut() {
	if w.out == nil {
		return
	}
	if len(*w.out) > 0 {
		w.c.write(*w.out)
	}
	w.c.s.putWBuf(w.out)
	w.out = nil
}

// SetReadDeadline sets the connection's read deadline.
func (w *response) SetReadDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return errAfterHandler // it would bound the connection's next request
	}
	return w.c.nc.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline.
func (w *response) SetWriteDeadline(t time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if w.handlerDone.Load() {
		return errAfterHandler
	}
	w.c.wdl = true
	return w.c.nc.SetWriteDeadline(t)
}

// commit puts the response header in out, followed by the body written
// so far, framed. final says the handler returned: a body not yet sent is
// then all there is, and its length is known.
func (w *response) commit(final bool) {
	w.mu.Lock()
	w.committed = true
	w.mu.Unlock()
	h := w.hdr
	code := w.status
	body := *w.out
	bodyOK := bodyAllowed(code)
	if !bodyOK {
		body = body[:0]
	}
	setCL := false
	if w.clen < 0 && final && bodyOK && (!w.isHEAD || w.written > 0) {
		w.clen, setCL = w.written, true
	}
	if bodyOK && !w.isHEAD && w.clen < 0 {
		if w.is11 {
			w.chunked = true
		} else {
			w.closeAfter = true
		}
	}
	if w.reqClose || w.c.s.shutting.Load() || httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		w.closeAfter = true
	}
	keepAlive10 := false
	if !w.is11 && !w.closeAfter {
		keepAlive10 = true
	}
	if _, ok := h["Content-Type"]; !ok && bodyOK && len(body) > 0 {
		h["Content-Type"] = []string{http.DetectContentType(body[:min(len(body), 512)])}
	}
	hb := w.c.s.getWBuf()
	out := appendStatus(*hb, w.is11, code)
	out = appendHeader(out, h, skipManaged)
	if _, ok := h["Date"]; !ok {
		out = append(out, "Date: "...)
		out = append(out, w.c.s.date.get()...)
		out = append(out, "\r\n"...)
	}
	if w.clen >= 0 && (bodyOK || code == http.StatusNotModified && !setCL) {
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, w.clen, 10)
		out = append(out, "\r\n"...)
	}
	if w.chunked {
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	}
	switch {
	case w.closeAfter && w.is11:
		out = append(out, "Connection: close\r\n"...)
	case keepAlive10:
		out = append(out, "Connection: keep-alive\r\n"...)
	default:
		out = appendValues(out, "Connection", h["Connection"])
	}
	out = append(out, "\r\n"...)
	if !w.isHEAD && len(body) > 0 {
		if w.chunked {
			out = appendChunk(out, body)
		} else {
			out = append(out, body...)
		}
	}
	*hb = out
	w.c.s.putWBuf(w.out)
	w.out = hb
	if !final {
		// The handler goes on (a stream, maybe held for hours): the map
		// sent is let go. A final commit's response ends now anyway, and a
		// goroutine the handler left may still read its Header.
		w.hdr = nil
	}
}

// finish ends the response after its handler returned.
func (w *response) finish() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	w.handlerDone.Store(true)
	bodyRead := true
	if !w.committed {
		bodyRead = w.discardBody()
		if !bodyRead {
			w.closeAfter = true // said in the header
		}
		if w.out == nil {
			w.out = w.c.s.getWBuf()
		}
		w.commit(true)
	}
	if w.chunked {
		if w.out == nil {
			w.out = w.c.s.getWBuf()
		}
		*w.out = append(*w.out, "0\r\n\r\n"...)
	}
	w.flushOut()
	if w.committed && bodyRead {
		bodyRead = w.discardBody()
	}
	w.bodyLeft = !bodyRead
	if !bodyRead || w.clen >= 0 && bodyAllowed(w.status) && !w.isHEAD && w.written != w.clen {
		w.closeAfter = true
	}
}

// discardBody reads what the handler left of the request body and reports
// whether the connection can read a next request. As net/http, it reads
// nothing when the body was closed by the handler or what is left of it is
// known to exceed maxDiscard: the connection then closes.
func (w *response) discardBody() bool {
	b := &w.body
	switch {
	case w.noBody || b.eof:
		return true
	case w.expectContinue && !w.wroteContinue:
		return false // the client may not send the body
	case b.closed || b.err != nil:
		return false
	case !b.chunked && b.n >= maxDiscard:
		return false
	}
	return b.discard()
}

func bodyAllowed(code int) bool {
	return (code < 100 || code > 199) && code != http.StatusNoContent && code != http.StatusNotModified
}

func appendChunk(out, p []byte) []byte {
	out = strconv.AppendUint(out, uint64(len(p)), 16)
	out = append(out, "\r\n"...)
	out = append(out, p...)
	return append(out, "\r\n"...)
}

func appendStatus(out []byte, is11 bool, code int) []byte {
	if is11 {
		out = append(out, "HTTP/1.1 "...)
	} else {
		out = append(out, "HTTP/1.0 "...)
	}
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, ' ')
	if text := http.StatusText(code); text != "" {
		out = append(out, text...)
	} else {
		out = append(out, "status code "...)
		out = strconv.AppendInt(out, int64(code), 10)
	}
	return append(out, "\r\n"...)
}

// skipManaged reports the header keys the server writes itself.
func skipManaged(k string) bool {
	switch k {
	case "Content-Length", "Transfer-Encoding", "Connection":
		return true
	}
	return false
}

// appendHeader appends h's lines, but for keys skip reports, keys that
// are not valid field names, and with CR and LF in values turned to
// spaces (as net/http does).
func appendHeader(out []byte, h http.Header, skip func(string) bool) []byte {
	for k, vv := range h {
		if skip != nil && skip(k) || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		out = appendValues(out, k, vv)
	}
	return out
}

func appendValues(out []byte, k string, vv []string) []byte {
	for _, v := range vv {
		out = append(out, k...)
		out = append(out, ": "...)
		if strings.ContainsAny(v, "\r\n") {
			v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
		}
		out = append(out, strings.TrimSpace(v)...)
		out = append(out, "\r\n"...)
	}
	return out
}
