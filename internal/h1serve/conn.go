package h1serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// Connection states, for Shutdown: an idle connection waits for a
// request and may be closed; an active one is reading or serving one.
const (
	stateActive int32 = iota
	stateIdle
	stateClosed
)

// conn is one client connection, served by one goroutine.
type conn struct {
	s      *Server
	nc     net.Conn
	raw    syscall.RawConn // nil when nc has no file descriptor
	rd     reader
	state  atomic.Int32
	remote string
	ctx    context.Context // the connection's: values only, never cancelled
	once   sync.Once
	werr   error // the first write error: the connection is then closed
	wdl    bool  // a write deadline is set
	post   bool  // the last request was a POST
	watch  *watcher

	// A response handed off by its handler (handoff.go), between serveOne
	// and serveHeld.
	held       *response
	heldCancel context.CancelFunc

	// The running request's disconnect watch (watch.go), under wmu.
	wmu        sync.Mutex
	seq        uint64 // counts requests; a watch names the one it is for
	cancel     context.CancelFunc
	registered bool
	regKey     uint64 // the watcher's key of the registration, while registered
	closed     bool
	bgWatch    bool    // the running request is watched by the fallback
	bg         *bgRead // the fallback watch, when watch is nil or failed
}

// serve reads requests and serves them until the connection ends, or
// until a handler hands its response off: the connection then moves on to
// a fresh goroutine (serveHeld) and this one, grown deep by the handler,
// ends.
func (c *conn) serve() {
	moved := false
	defer func() {
		if !moved {
			c.closeOnExit(recover())
		}
	}()
	c.remote = c.nc.RemoteAddr().String()
	c.ctx = context.WithValue(context.Background(), http.LocalAddrContextKey, c.nc.LocalAddr())
	moved = c.serveLoop(true)
}

// serveHeld runs a handed-off response's continuation (handoff.go) on a
// goroutine of its own, started shallow: a held stream waits on it, and
// a stack that never grew stays at the runtime's 2 KB minimum, where one
// that grew (the handler's, 16 KB) is shrunk to 4 KB at best. The
// connection then goes on here.
func (c *conn) serveHeld() {
	moved := false
	defer func() {
		if !moved {
			c.closeOnExit(recover())
		}
	}()
	c.runHandoff(c.held.ho)
	if c.endHeld() {
		moved = c.serveLoop(false)
	}
}

// closeOnExit ends the connection as its goroutine exits, logging the
// panic v unless it is nil or http.ErrAbortHandler.
func (c *conn) closeOnExit(v any) {
	if v != nil && v != http.ErrAbortHandler {
		buf := make([]byte, 64<<10)
		buf = buf[:runtime.Stack(buf, false)]
		c.s.logf("h1serve: panic serving %s: %v\n%s", c.remote, v, buf)
	}
	c.close()
	c.rd.release()
	c.abandonHeld()
}

// serveLoop serves requests until the connection ends (false) or a
// response is handed off, which it starts serveHeld for (true: the
// connection is the new goroutine's).
func (c *conn) serveLoop(first bool) (moved bool) {
	for ; ; first = false {
		if !c.await(first) || !c.serveOne() {
			return false
		}
		if c.held != nil { // handed off (handoff.go): run on a fresh goroutine
			go c.serveHeld()
			return true
		}
	}
}

// await waits for the first bytes of a request, idle (Shutdown may close
// the connection meanwhile), and reports whether one came.
func (c *conn) await(first bool) bool {
	c.state.Store(stateIdle)
	if c.s.shutting.Load() {
		return false
	}
	if first {
		if d := c.s.ReadHeaderTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		}
	} else {
		if d := c.s.IdleTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
	if c.rd.buffered() == 0 {
		if err := c.rd.fill(); err != nil {
			return false
		}
	}
	if !c.state.CompareAndSwap(stateIdle, stateActive) {
		return false
	}
	if !first {
		if d := c.s.ReadHeaderTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		} else {
			_ = c.nc.SetReadDeadline(time.Time{})
		}
	}
	return true
}

// serveOne reads one request, serves it and reports whether the
// connection may read another.
func (c *conn) serveOne() bool {
	if c.post { // an extra CRLF after a POST body is tolerated (RFC 9112 section 2.2), as net/http does
		c.skipCRLF()
	}
	head, err := c.rd.readHead(c.s.headLimit())
	if err != nil {
		switch {
		case err == errHeadTooLarge:
			c.reject(&httpError{http.StatusRequestHeaderFieldsTooLarge, "request header too large"})
		case err == io.EOF && c.rd.buffered() > 0:
			c.reject(badRequest("incomplete request head"))
		}
		return false
	}
	ex := &response{c: c, hdr: make(http.Header), clen: -1}
	ex.body.ex = ex
	var rv http.Request // the request before its context is set; WithContext copies it
	if herr := ex.parseHead(&rv, head); herr != nil {
		c.reject(herr)
		return false
	}
	c.rd.release()
	if c.s.ReadHeaderTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	if d := c.s.WriteTimeout; d > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(d))
		c.wdl = true
	} else if c.wdl {
		_ = c.nc.SetWriteDeadline(time.Time{})
		c.wdl = false
	}
	rv.RemoteAddr = c.remote
	ex.isHEAD = rv.Method == http.MethodHead
	ex.reqClose, ex.noBody = rv.Close, rv.Body == http.NoBody
	c.post = rv.Method == http.MethodPost
	ctx, cancel := context.WithCancel(c.ctx)
	r := rv.WithContext(reqscope.New(ctx)) // the handlers' first value needs no copy of r
	if r.RequestURI == "*" {
		ex.serveAsterisk(r.Method)
	} else {
		h := c.s.Handler
		if h == nil {
			h = http.DefaultServeMux
		}
		c.startWatch(cancel, r.Body == http.NoBody)
		h.ServeHTTP(ex, r)
		if ex.ho != nil { // handed off (c.held is ex): serve runs the rest (runHandoff, endHeld)
			c.heldCancel = cancel
			return true
		}
		c.endWatch()
	}
	return c.endResponse(ex, cancel)
}

// endResponse ends a response whose handler (and continuation) returned
// and reports whether the connection may read another request.
func (c *conn) endResponse(ex *response, cancel context.CancelFunc) bool {
	ex.finish()
	cancel()
	if ex.bodyLeft && c.werr == nil {
		c.linger()
		return false
	}
	return !ex.closeAfter && c.werr == nil && !c.s.shutting.Load()
}

// serveAsterisk answers "OPTIONS *" (200, as net/http does) and refuses
// "*" with any other method.
func (ex *response) serveAsterisk(method string) {
	if method == http.MethodOptions {
		ex.hdr.Set("Content-Length", "0")
		ex.WriteHeader(http.StatusOK)
		return
	}
	ex.closeAfter = true
	ex.WriteHeader(http.StatusBadRequest)
}

// skipCRLF drops up to 4 CR or LF bytes a client sent after a POST body.
func (c *conn) skipCRLF() {
	rd := &c.rd
	for i := 0; i < 4 && rd.r < rd.w && (rd.buf[rd.r] == '\r' || rd.buf[rd.r] == '\n'); i++ {
		rd.r++
	}
	if rd.r == rd.w {
		rd.release()
	}
}

// write writes b unless an earlier write failed; its error is kept.
func (c *conn) write(b []byte) {
	if c.werr != nil || len(b) == 0 {
		return
	}
	if _, err := c.nc.Write(b); err != nil {
		c.werr = err
	}
}

// reject answers a request the server refuses and lets the client read
// the answer before the connection closes.
func (c *conn) reject(e *httpError) {
	text := http.StatusText(e.code)
	msg := text
	if e.msg != "" {
		msg += ": " + e.msg
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.write([]byte("HTTP/1.1 " + strconv.Itoa(e.code) + " " + text +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" + strconv.Itoa(e.code) + " " + msg))
	c.linger()
}

// lingerTime bounds how long a connection closing with request bytes
// still coming reads and drops them (net/http waits as long).
const lingerTime = 500 * time.Millisecond

// linger ends the connection's sending side, then reads and drops what
// the client still sends, for at most lingerTime or until it closes: a
// close with unread bytes resets the connection, and a reset arriving
// before the client read the answer (a 413 to a body it is still
// uploading) loses that answer. Only time bounds it: nothing is kept.
func (c *conn) linger() {
	type closeWriter interface{ CloseWrite() error }
	if cw, ok := c.nc.(closeWriter); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	var buf [512]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			return
		}
	}
}

// close closes the connection once, after ending its disconnect watch
// (its file descriptor must leave the watcher before it can be reused).
func (c *conn) close() {
	c.once.Do(func() {
		c.state.Store(stateClosed)
		c.wmu.Lock()
		c.closed = true
		if c.registered {
			c.watch.unregister(c)
		}
		if c.cancel != nil {
			c.cancel()
		}
		c.wmu.Unlock()
		c.nc.Close()
		c.s.forget(c)
	})
}

// startWatch begins watching for the client leaving while the handler
// runs: through the server's watcher, or else a goroutine reading the
// connection once the request body is read.
func (c *conn) startWatch(cancel context.CancelFunc, noBody bool) {
	c.wmu.Lock()
	c.seq++
	c.cancel = cancel
	seq := c.seq
	c.bgWatch = false
	c.wmu.Unlock()
	if c.watch != nil && c.watch.add(c, seq) {
		return
	}
	c.wmu.Lock()
	c.bgWatch = true
	c.wmu.Unlock()
	if noBody {
		c.startBackgroundRead()
	}
}

// bodyDone is called when the request body was read to its end.
func (c *conn) bodyDone() {
	c.wmu.Lock()
	fallback := c.cancel != nil && c.bgWatch
	c.wmu.Unlock()
	if fallback {
		c.startBackgroundRead()
	}
}

// endWatch stops the watch when the handler returned.
func (c *conn) endWatch() {
	c.wmu.Lock()
	c.seq++
	c.cancel = nil
	if c.registered {
		c.watch.unregister(c)
	}
	bg := c.bg
	c.bg = nil
	c.wmu.Unlock()
	if bg != nil {
		bg.stop(c)
	}
}

// bgRead is the portable disconnect watch: a goroutine blocked in a
// one-byte read while the handler runs, as net/http's.
type bgRead struct {
	done chan struct{}
	got  bool
	b    [1]byte
}

func (c *conn) startBackgroundRead() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.bg != nil || c.cancel == nil || c.closed {
		return
	}
	bg := &bgRead{done: make(chan struct{})}
	c.bg = bg
	cancel := c.cancel
	c.rd.release()
	nc := c.nc
	buffered := c.rd.buffered() > 0
	if buffered {
		close(bg.done) // a pipelined request is already read: nothing to watch
		return
	}
	go func() {
		defer close(bg.done)
		defer func() {
			if v := recover(); v != nil {
				c.s.logf("h1serve: panic in a background read: %v", v)
			}
		}()
		n, err := nc.Read(bg.b[:])
		if n == 1 {
			bg.got = true
			return
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			cancel()
		}
	}()
}

// stop ends the background read and puts back a byte it read.
func (bg *bgRead) stop(c *conn) {
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	<-bg.done
	_ = c.nc.SetReadDeadline(time.Time{})
	if bg.got {
		c.rd.unread(bg.b[0])
	}
}
