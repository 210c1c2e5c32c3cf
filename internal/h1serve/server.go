package h1serve

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Bounds of what one connection can make the server hold.
const (
	// DefaultMaxHeaderBytes bounds a request's head when MaxHeaderBytes is
	// not positive (net/http's default).
	DefaultMaxHeaderBytes = 1 << 20
	// headSlack is added to MaxHeaderBytes for the request line and line
	// ends, as net/http does.
	headSlack = 4096
	// readBufSize is a connection's read buffer, held only while bytes of
	// a request wait in it or a read is running (see reader).
	readBufSize = 4096
	// writeBufSize is a response's write buffer: a body that fits and is
	// not flushed is sent with a Content-Length; held only while a handler
	// runs and has unflushed bytes.
	writeBufSize = 8192
	// maxDiscard is how much of a request body a handler left unread the
	// server reads past to keep the connection; more closes it.
	maxDiscard = 256 << 10
	// maxChunkLine bounds a chunk-size or trailer line of a chunked body.
	maxChunkLine = 4096
	// watchDelay is the disconnect watcher's scan interval: a handler is
	// watched for its client leaving once it ran between one and two of
	// them (see doc.go). Longer than a busy gateway's calls take at C=10.
	watchDelay = 25 * time.Millisecond
)

// Server serves an http.Handler over HTTP/1.1 on net.Listeners. Its fields
// mean what http.Server's fields of the same names mean; set them before
// Serve. ReadTimeout has no equivalent: a handler bounds a body read with
// http.ResponseController.SetReadDeadline.
type Server struct {
	Handler           http.Handler
	ReadHeaderTimeout time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ErrorLog          *log.Logger // nil logs to the log package's standard logger

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	watch     *watcher // nil until a connection needs it, or where there is none
	watchErr  bool     // the watcher could not start: the fallback is used

	shutting atomic.Bool
	date     dateCache
	rbufs    sync.Pool // *[]byte of readBufSize
	wbufs    sync.Pool // *[]byte of writeBufSize
}

// FromStd returns a Server with s's handler, timeouts, header bound and
// error log: the fields of http.Server it honours (fromStdFields). Any
// other field of s that is set is an error naming it, rather than a
// setting silently dropped (a ReadTimeout, a TLSConfig, a ConnState
// hook...): this server has no equivalent for them.
func FromStd(s *http.Server) (*Server, error) {
	v := reflect.ValueOf(s).Elem()
	var unsupported []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && !fromStdField(f.Name) && !v.Field(i).IsZero() {
			unsupported = append(unsupported, f.Name)
		}
	}
	if len(unsupported) > 0 {
		return nil, fmt.Errorf("h1serve: http.Server fields set that this server does not support: %s", strings.Join(unsupported, ", "))
	}
	return &Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		WriteTimeout:      s.WriteTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ErrorLog:          s.ErrorLog,
	}, nil
}

// fromStdField reports whether FromStd carries over the http.Server field
// of that name.
func fromStdField(name string) bool {
	switch name {
	case "Handler", "ReadHeaderTimeout", "WriteTimeout", "IdleTimeout", "MaxHeaderBytes", "ErrorLog":
		return true
	}
	return false
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

func (s *Server) headLimit() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes + headSlack
	}
	return DefaultMaxHeaderBytes + headSlack
}

// Serve accepts connections on ln and serves each on its own goroutine
// until ln fails or Shutdown or Close is called; it then returns
// http.ErrServerClosed (or ln's error). ln is closed on return.
func (s *Server) Serve(ln net.Listener) error {
	if !s.track(ln, true) {
		ln.Close()
		return http.ErrServerClosed
	}
	defer s.track(ln, false)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) || !temporary(err) {
				return err
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logf("h1serve: accept error: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		c := s.newConn(nc)
		if c == nil {
			nc.Close()
			continue
		}
		go c.serve()
	}
}

// temporary reports whether an accept error is worth retrying (too many
// open files, a connection aborted before it was accepted, a timeout).
func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOBUFS)
}

// track adds (or removes) ln from the listeners Shutdown closes; adding
// fails once the server is shutting down.
func (s *Server) track(ln net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		if _, ok := s.listeners[ln]; ok {
			delete(s.listeners, ln)
			ln.Close()
		}
		return true
	}
	if s.shutting.Load() {
		return false
	}
	if s.listeners == nil {
		s.listeners = map[net.Listener]struct{}{}
	}
	s.listeners[ln] = struct{}{}
	return true
}

// newConn registers nc, or returns nil when the server is shutting down.
func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
		}
	}
	c.rd.c = c
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return nil
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	if c.raw != nil && s.watch == nil && !s.watchErr {
		w, err := newWatcher(s)
		if err != nil {
			s.watchErr = true
			s.logf("h1serve: client disconnects are watched by a goroutine per request: %v", err)
		} else {
			s.watch = w
		}
	}
	if c.raw != nil {
		c.watch = s.watch
	}
	return c
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeListeners closes every listener; Serve then returns.
func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ln := range s.listeners {
		ln.Close()
		delete(s.listeners, ln)
	}
}

// Shutdown stops accepting, closes idle connections and waits for every
// active one to end its request and close, or for ctx to end (its error is
// then returned and the remaining connections are left open: call Close).
// A handler that never returns (a stream) must be ended by other means.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.closeListeners()
	wait := time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		if s.closeIdle() {
			s.stopWatch()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			wait = min(2*wait, 500*time.Millisecond)
			t.Reset(wait)
		}
	}
}

// closeIdle closes the connections waiting for a request and reports
// whether none is left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	var idle []*conn
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			idle = append(idle, c)
		}
	}
	s.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) == 0
}

// Close closes every listener and connection at once. Handlers still
// running see their requests' contexts cancelled and their writes fail.
func (s *Server) Close() error {
	s.shutting.Store(true)
	s.closeListeners()
	s.mu.Lock()
	all := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.state.Store(stateClosed)
		c.close()
	}
	s.stopWatch()
	return nil
}

func (s *Server) stopWatch() {
	s.mu.Lock()
	w := s.watch
	s.watch = nil
	s.watchErr = true // no new watcher once shut down
	s.mu.Unlock()
	if w != nil {
		w.stop()
	}
}

// dateCache is the Date header's value, formatted once a second.
type dateCache struct {
	v atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	b   []byte
}

func (d *dateCache) get() []byte {
	now := time.Now()
	if v := d.v.Load(); v != nil && v.sec == now.Unix() {
		return v.b
	}
	v := &dateValue{sec: now.Unix(), b: now.UTC().AppendFormat(nil, http.TimeFormat)}
	d.v.Store(v)
	return v.b
}

// getRBuf returns a read buffer of readBufSize bytes; the pointer goes
// back to putRBuf, so pooling allocates nothing.
func (s *Server) getRBuf() *[]byte {
	if p, ok := s.rbufs.Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, readBufSize)
	return &b
}

func (s *Server) putRBuf(p *[]byte) {
	if cap(*p) == readBufSize { // a buffer grown for a large head is left to the collector
		*p = (*p)[:readBufSize]
		s.rbufs.Put(p)
	}
}

// getWBuf returns an empty write buffer of writeBufSize bytes' capacity.
func (s *Server) getWBuf() *[]byte {
	if p, ok := s.wbufs.Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, 0, writeBufSize)
	return &b
}

func (s *Server) putWBuf(p *[]byte) {
	if cap(*p) == writeBufSize {
		*p = (*p)[:0]
		s.wbufs.Put(p)
	}
}

// httpError is a request the server answers itself, then closes the
// connection.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.code, e.msg) }

func badRequest(msg string) *httpError { return &httpError{http.StatusBadRequest, msg} }
