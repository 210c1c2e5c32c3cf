package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of h1Transport's connection pool (the values net/http's default
// transport uses for its idle timeout, the gateway's own for the counts).
const (
	h1MaxIdlePerHost = 64               // idle connections kept per host
	h1MaxIdle        = 256              // idle connections kept in all
	h1IdleTimeout    = 90 * time.Second // an idle connection older than this is closed
	h1DialTimeout    = 30 * time.Second
	h1KeepAlive      = 30 * time.Second // TCP keep-alive probes
	h1BufSize        = 8 << 10          // each connection's read and write buffers
)

// h1Transport carries plain-HTTP (http://, no proxy) requests over HTTP/1.1
// on pooled keep-alive connections, in the calling goroutine: the request
// is written whole (header and body in one write when they fit the
// connection's buffer), then the response is read on the same goroutine.
// net/http's transport runs two goroutines per connection (a reader and a
// writer) and hands every request and response between them over channels;
// on a gateway's short calls that handoff cost more than the gateway's own
// work. Everything else (https, a proxy) goes to fallback, unchanged.
//
// Requests are written as (*http.Request).Write writes them and responses
// parsed as http.ReadResponse parses them (writeRequest and readResponse:
// the common message without their allocations, anything else by them), so
// framing (Content-Length, chunked, bodies that end with the connection,
// bodiless statuses) is net/http's own; what this type
// adds is the connection's life: a connection is reused only after its
// response body was read to its end with nothing buffered beyond it and
// neither side asked to close; a body closed early, a read or write error
// or a cancelled context closes it. The context is watched for the whole
// exchange, the body included (context.AfterFunc closes the connection), so
// a cancelled SSE stream ends at once.
type h1Transport struct {
	fallback *http.Transport
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	noReuse  bool // every request on a new connection (see fresh)

	mu       sync.Mutex
	idle     map[string][]*h1Conn // per host:port, most recently used last
	nIdle    int
	sweeping bool            // a sweep of expired idle connections is scheduled
	direct   map[string]bool // per host:port: no proxy applies
}

// newH1Transport returns a transport that sends plain-HTTP requests itself
// and everything else through fallback (whose dialer it also uses).
func newH1Transport(fallback *http.Transport) *h1Transport {
	t := &h1Transport{fallback: fallback, idle: map[string][]*h1Conn{}, direct: map[string]bool{}}
	t.dial = fallback.DialContext
	if t.dial == nil {
		d := &net.Dialer{Timeout: h1DialTimeout, KeepAlive: h1KeepAlive}
		t.dial = d.DialContext
	}
	t.noReuse = fallback.DisableKeepAlives
	return t
}

// fresh returns a transport like t that opens a new connection for every
// request.
func (t *h1Transport) fresh() *h1Transport {
	ft := t.fallback.Clone()
	ft.DisableKeepAlives = true
	return newH1Transport(ft)
}

// h1Conn is one pooled connection.
type h1Conn struct {
	conn   net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	check  *aliveCheck
	key    string
	idleAt time.Time
	reused bool
}

// RoundTrip implements http.RoundTripper.
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" || !t.isDirect(req) {
		return t.fallback.RoundTrip(req)
	}
	key := canonicalAddr(req)
	for {
		pc, err := t.conn(req.Context(), key)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err, replay := t.exchange(req, pc)
		if !replay {
			return resp, err
		}
		// A reused connection the upstream had closed while idle: the
		// request did not reach it, so it is sent again on a new one.
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// rewind returns req with its body to be read again.
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

// isDirect reports whether no proxy applies to req's host (remembered per
// host: the proxy settings are read from the environment once).
func (t *h1Transport) isDirect(req *http.Request) bool {
	if t.fallback.Proxy == nil {
		return true
	}
	t.mu.Lock()
	d, ok := t.direct[req.URL.Host]
	t.mu.Unlock()
	if ok {
		return d
	}
	u, err := t.fallback.Proxy(req)
	d = err == nil && u == nil
	t.mu.Lock()
	if len(t.direct) < h1MaxIdle {
		t.direct[req.URL.Host] = d
	}
	t.mu.Unlock()
	return d
}

func canonicalAddr(req *http.Request) string {
	if req.URL.Port() != "" {
		return req.URL.Host
	}
	return net.JoinHostPort(req.URL.Hostname(), "80")
}

// canReplay reports whether req may be sent again after a reused
// connection failed: its body can be had again and, unless it was not
// written whole (a server serves no request cut short), its method is one
// a server must be able to take twice.
func canReplay(req *http.Request, written bool) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if !written {
		return true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// exchange writes req on pc and reads its response. replay is true when
// req may be sent again on a new connection: pc was reused, and failed
// while req was written or was closed before a byte of the response
// arrived (see canReplay).
func (t *h1Transport) exchange(req *http.Request, pc *h1Conn) (resp *http.Response, err error, replay bool) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { pc.conn.Close() })
	fail := func(err error, written bool) (*http.Response, error, bool) {
		stop()
		pc.conn.Close()
		if ctx.Err() != nil {
			closeBody(req)
			return nil, ctx.Err(), false
		}
		return nil, err, pc.reused && canReplay(req, written)
	}
	if err := writeRequest(pc.bw, req); err != nil {
		return fail(err, false) // a request cut short is not served
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err, false)
	}
	if _, err := pc.br.Peek(1); err != nil {
		if err != io.EOF {
			pc.reused = false // only a close before any answer may be a stale connection's
		}
		return fail(err, true)
	}
	pc.reused = false // an answer started: it is this request's
	for {
		resp, err = readResponse(pc.br, req)
		if err != nil {
			return fail(err, true)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// An interim 1xx answer: the real one follows.
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("upstream switched protocols unasked"), true)
	}
	b := &h1Body{t: t, pc: pc, rc: resp.Body, stop: stop, keep: !t.noReuse && !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.finish(true)
		return resp, nil, false
	}
	resp.Body = b
	return resp, nil, false
}

// errBodyClosed is what a read of a closed response body returns.
var errBodyClosed = errors.New("read on closed response body")

// h1Body is a response body on a pooled connection: read to its end, it
// gives the connection back to the pool; closed before, it closes it.
type h1Body struct {
	t    *h1Transport
	pc   *h1Conn
	rc   io.ReadCloser // the body as http.ReadResponse framed it
	stop func() bool   // stops watching the request's context
	keep bool          // the connection may be reused after this response
	done atomic.Bool   // the exchange ended (finish ran)
	eof  atomic.Bool   // the body was read to its end
	// deadline: endWithin set a read deadline on the connection, cleared
	// before it goes back to the pool.
	deadline bool
}

// endWithin bounds the reading of the rest of the body to d from now with
// the connection's read deadline (a read past it fails, and the connection
// is closed) and reports whether it could; one timer per connection, where
// a timer per call (time.AfterFunc) cost two allocations. It must be
// called on the goroutine reading the body.
func (b *h1Body) endWithin(d time.Duration) bool {
	if b.done.Load() {
		return false
	}
	if b.pc.conn.SetReadDeadline(time.Now().Add(d)) != nil {
		return false
	}
	b.deadline = true
	return true
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.eof.Load() {
		return 0, io.EOF
	}
	if b.done.Load() {
		return 0, errBodyClosed
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
		b.finish(b.keep)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

// Close closes the connection unless the body was read to its end: the
// rest of the response would be read by the next request.
func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

// finish ends the exchange once: the connection goes back to the pool when
// reuse is true, nothing more is buffered on it and the context did not
// close it; else it is closed.
func (b *h1Body) finish(reuse bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && reuse && b.pc.br.Buffered() == 0 &&
		(!b.deadline || b.pc.conn.SetReadDeadline(time.Time{}) == nil) {
		b.t.put(b.pc)
		return
	}
	b.pc.conn.Close()
}

// conn returns an idle connection to key, or dials a new one. Every idle
// connection is peeked at (one system call) before reuse, however briefly
// it was idle: an upstream that closes after each answer without saying so
// (no Connection: close) does it within microseconds, and a POST written
// to such a connection cannot be sent again. Skipping the check for
// connections idle under a millisecond was measured and rejected: it saved
// well under 1 % of a call's CPU and turned those upstreams' closes into
// failed calls.
func (t *h1Transport) conn(ctx context.Context, key string) (*h1Conn, error) {
	for {
		pc := t.take(key)
		if pc == nil {
			break
		}
		if pc.check.alive() {
			pc.reused = true
			return pc, nil
		}
		pc.conn.Close() // the upstream closed it while it was idle
	}
	c, err := t.dial(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	return &h1Conn{conn: c, key: key, br: bufio.NewReaderSize(c, h1BufSize), bw: bufio.NewWriterSize(c, h1BufSize),
		check: newAliveCheck(c)}, nil
}

// take removes the most recently used unexpired idle connection to key
// from the pool, closing the expired ones it passes.
func (t *h1Transport) take(key string) *h1Conn {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.idle[key]
	for len(l) > 0 {
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		l = l[:len(l)-1]
		t.nIdle--
		if now.Sub(pc.idleAt) < h1IdleTimeout {
			t.idle[key] = l
			return pc
		}
		pc.conn.Close()
	}
	delete(t.idle, key)
	return nil
}

// put keeps pc for reuse, within the pool's bounds, or closes it.
func (t *h1Transport) put(pc *h1Conn) {
	pc.idleAt = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.noReuse || len(t.idle[pc.key]) >= h1MaxIdlePerHost || t.nIdle >= h1MaxIdle {
		pc.conn.Close()
		return
	}
	t.idle[pc.key] = append(t.idle[pc.key], pc)
	t.nIdle++
	if !t.sweeping {
		t.sweeping = true
		time.AfterFunc(h1IdleTimeout, t.sweep)
	}
}

// sweep closes the idle connections that expired, and runs again while
// any are left.
func (t *h1Transport) sweep() {
	defer func() { _ = recover() }() // closing connections cannot panic; nothing is left to log
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, l := range t.idle {
		i := 0
		for i < len(l) && now.Sub(l[i].idleAt) >= h1IdleTimeout {
			l[i].conn.Close()
			i++
		}
		t.nIdle -= i
		if i == len(l) {
			delete(t.idle, key)
		} else {
			t.idle[key] = append(l[:0], l[i:]...)
		}
	}
	t.sweeping = t.nIdle > 0
	if t.sweeping {
		time.AfterFunc(h1IdleTimeout/2, t.sweep)
	}
}

// CloseIdleConnections closes every idle connection, its own and the
// fallback's.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	for key, l := range t.idle {
		for _, pc := range l {
			pc.conn.Close()
		}
		delete(t.idle, key)
	}
	t.nIdle = 0
	t.mu.Unlock()
	t.fallback.CloseIdleConnections()
}
