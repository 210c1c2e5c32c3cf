package admit

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/reqscope"
)

// Defaults, used when a Config field is zero.
const (
	// DefaultBodyReadTimeout bounds reading one request body.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultMaxInflight bounds requests being served at once.
	DefaultMaxInflight = 256
)

// Config configures Handler.
type Config struct {
	// Guard refuses DNS-rebinding requests; nil means NewHostGuard(nil, nil).
	Guard *HostGuard
	// BodyReadTimeout bounds reading a request's body, from when its
	// handler starts: a body trickled slower is cut.
	BodyReadTimeout time.Duration
	// MaxInflight bounds requests being served at once; beyond it a request
	// gets 503 with Retry-After. A long-lived stream gives its place back
	// when it starts streaming (see KeepOpen); health probes never wait.
	MaxInflight int
}

// admitted is one request's place in the in-flight bound, kept in its
// context's scope (reqscope.Admission).
type admitted struct {
	slots    chan struct{} // the bound's places: one is this request's until done
	released atomic.Bool
	held     bool // handed to work that outlives the request (HoldSlot)
}

// done gives the place back, once.
func (a *admitted) done() {
	if a.released.CompareAndSwap(false, true) {
		<-a.slots
	}
}

// admission is the request's place in the bound, nil when it holds none.
func admission(r *http.Request) *admitted {
	a, _ := reqscope.Value(r.Context(), reqscope.Admission).(*admitted)
	return a
}

// HoldSlot keeps r's place in the in-flight bound after its handler
// returns, for work the request started that answers later; the returned
// func gives it back. It must be called on the handler's goroutine.
func HoldSlot(r *http.Request) (release func()) {
	a := admission(r)
	if a == nil {
		return func() {}
	}
	a.held = true
	return a.done
}

// Handler returns next behind the checks every request passes before any
// handler runs: the host guard, the in-flight bound and the body read
// deadline.
func Handler(next http.Handler, cfg Config) http.Handler {
	if cfg.Guard == nil {
		cfg.Guard = NewHostGuard(nil, nil)
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	slots := make(chan struct{}, cfg.MaxInflight)
	return cfg.Guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/health/") {
			select {
			case slots <- struct{}{}:
			default:
				w.Header().Set("Retry-After", "1")
				refuse(w, http.StatusServiceUnavailable, busy)
				return
			}
			a := &admitted{slots: slots}
			defer func() {
				if !a.held {
					a.done()
				}
			}()
			r = reqscope.Request(reqscope.With(r.Context(), reqscope.Admission, a), r)
		}
		if r.Body != nil && r.Body != http.NoBody {
			if http.NewResponseController(w).SetReadDeadline(time.Now().Add(cfg.BodyReadTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, w: w}
			}
		}
		next.ServeHTTP(w, r)
	}))
}

// deadlineBody clears the connection's read deadline once the body is read
// to its end: the server then watches the idle connection for the client
// leaving, and a deadline firing there would cancel the request's context.
// A body not read to its end keeps the deadline, so even the server's
// discarding of an unread body is bounded.
type deadlineBody struct {
	io.ReadCloser
	w       http.ResponseWriter // its controller is made when needed: kept, it was an allocation per request
	cleared bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.cleared {
		b.cleared = true
		_ = http.NewResponseController(b.w).SetReadDeadline(time.Time{})
	}
	return n, err
}

// KeepOpen turns the request into a long-lived stream: it lifts the read and
// write deadlines of its connection and gives back its place in the
// in-flight bound (open connections still bound streams).
func KeepOpen(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	if a := admission(r); a != nil {
		a.done()
	}
}

// The two refusals admission answers with, JSON-RPC errors without an id:
// the request was never read.
var (
	busy      = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"the gateway is busy; retry shortly"}}`)
	forbidden = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Host or Origin header not allowed"}}`)
)

// refuse answers a request admission turned away.
func refuse(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
