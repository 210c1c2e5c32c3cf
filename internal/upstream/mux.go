package upstream

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// mux correlates requests and responses on one shared message stream (a stdio
// child or a legacy HTTP+SSE connection), where every message of every request
// arrives on the same reader.
type mux struct {
	env   *env
	write func(ctx context.Context, msg []byte) error
	cred  string // names the session for its notifications (OwnerKey)

	// ctx lives as long as the stream; server-request handlers derive from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	pending  map[jsonrpc.ID]*pendingCall
	progress map[string]*exchange // upstream progress token → exchange

	done    chan struct{} // closed when the stream ends
	doneErr error
	once    sync.Once
	serving sync.WaitGroup // the replier (see reply)

	replies     chan []byte // answers that belong to no call, for the replier
	replierOnce sync.Once
}

// replyQueue bounds the answers that belong to no call (refusals, pings)
// waiting for the stream; more are dropped, and the upstream's request times
// out on its side.
const replyQueue = 64

type pendingCall struct {
	ex   *exchange
	resp chan *jsonrpc.Message
	// hctx is the call's handler context (from the call's), made under
	// mux.mu when the first server→client request for the call arrives:
	// most calls get none, and a context per call would cost each of them.
	// It ends when the call ends.
	hctx lazyCancel
}

func newMux(e *env, cred string, write func(context.Context, []byte) error) *mux {
	ctx, cancel := context.WithCancel(context.Background())
	return &mux{
		env: e, write: write, cred: cred, ctx: ctx, cancel: cancel,
		pending:  map[jsonrpc.ID]*pendingCall{},
		progress: map[string]*exchange{},
		done:     make(chan struct{}),
		replies:  make(chan []byte, replyQueue),
	}
}

func (m *mux) sharedStream() bool { return true }

// negotiated does nothing: messages on a shared stream name no revision.
func (m *mux) negotiated(string) {}

// follow opens nothing: the one stream already carries what belongs to no
// request, and it is lost when that stream ends.
func (m *mux) follow(context.Context) (context.Context, func()) { return m.ctx, func() {} }

// standing is false: a stdio child is not ended for want of followers.
func (m *mux) standing() bool { return false }

// abandoned does nothing: ending the stream waits behind no request.
func (m *mux) abandoned() {}

// dead reports whether the stream has ended.
func (m *mux) dead() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// fail ends the stream: every pending and future call gets err.
func (m *mux) fail(err error) {
	m.once.Do(func() {
		m.doneErr = err
		close(m.done)
		m.cancel()
	})
}

func (m *mux) call(ctx context.Context, ex *exchange, r outgoing) (*jsonrpc.Message, error) {
	if m.dead() {
		return nil, m.doneErr
	}
	p := &pendingCall{ex: ex, resp: make(chan *jsonrpc.Message, 1), hctx: lazyCancel{parent: ctx}}
	m.mu.Lock()
	m.pending[r.id] = p
	if ex.upToken != nil {
		m.progress[string(ex.upToken)] = ex
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.pending, r.id)
		if ex.upToken != nil {
			delete(m.progress, string(ex.upToken))
		}
		hctx := p.hctx // made under mu by the reader, if at all
		m.mu.Unlock()
		hctx.stop()
		ex.handlers.Wait()
	}()
	if err := m.write(ctx, r.body); err != nil {
		if errors.As(err, new(*undeliveredError)) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	select {
	case resp := <-p.resp:
		return resp, nil
	case <-m.done:
		// A response may have raced the end of the stream.
		select {
		case resp := <-p.resp:
			return resp, nil
		default:
		}
		return nil, m.doneErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// undeliveredError is a write abandoned (its context ended) before the
// whole message reached the upstream: the upstream cannot have started on
// it, so there is nothing to cancel there.
type undeliveredError struct{ err error }

func (e *undeliveredError) Error() string { return e.err.Error() }
func (e *undeliveredError) Unwrap() error { return e.err }

func (m *mux) send(ctx context.Context, body []byte) error {
	if m.dead() {
		return m.doneErr
	}
	return m.write(ctx, body)
}

// dispatch routes one message read from the stream.
func (m *mux) dispatch(msg *jsonrpc.Message) {
	switch msg.Kind() {
	case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
		m.mu.Lock()
		p := m.pending[msg.ID]
		m.mu.Unlock()
		if p == nil {
			m.env.msgDebug("ignored response with an unmatched id")
			return
		}
		select {
		case p.resp <- msg:
		default:
			m.env.msgDebug("ignored duplicate response")
		}
	case jsonrpc.KindNotification:
		if tok := progressToken(msg.Params); msg.Method == mcp.NotifProgress && tok != "" {
			m.mu.Lock()
			ex := m.progress[tok]
			m.mu.Unlock()
			if ex != nil {
				ex.notify(msg)
			}
			return
		}
		if id := subscriptionOf(msg.Params); id != "" {
			// A listen stream's event names its listen request.
			m.mu.Lock()
			var p *pendingCall
			for pid, pc := range m.pending {
				if pid.String() == id {
					p = pc
				}
			}
			m.mu.Unlock()
			if p != nil {
				p.ex.notify(msg)
				return
			}
		}
		if msg.Method == mcp.NotifMessage {
			// A log line names no request: it goes to the caller of the
			// one call in flight that takes logs, else to the client.
			var target *exchange
			n := 0
			m.mu.Lock()
			for _, p := range m.pending {
				if p.ex.in != nil && p.ex.in.Log != nil {
					n++
					target = p.ex
				}
			}
			m.mu.Unlock()
			if n == 1 {
				target.notify(msg)
				return
			}
		}
		m.env.deliver(msg, m.cred)
	case jsonrpc.KindRequest:
		m.serveRequest(msg)
	}
}

// serveRequest answers a server→client request. On a shared stream nothing
// says which call it belongs to: it goes to the one pending call that can
// answer it; with none, or more than one, it is refused, because handing it
// to the wrong caller would show one caller another's prompt.
func (m *mux) serveRequest(msg *jsonrpc.Message) {
	if msg.Method == mcp.MethodPing {
		m.reply(jsonrpc.EncodeResult(msg.ID, []byte(`{}`)))
		return
	}
	var target *pendingCall
	candidates := 0
	started := false
	m.mu.Lock()
	for _, p := range m.pending {
		if p.ex.canServeStray(msg.Method) {
			candidates++
			target = p
		}
	}
	var hctx context.Context
	if candidates == 1 {
		started = target.ex.startHandler()
		if started {
			hctx = target.hctx.get()
		}
	}
	m.mu.Unlock()
	switch {
	case candidates > 1:
		m.reply(jsonrpc.EncodeError(msg.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError,
			"%s cannot be attributed to one request on this connection", msg.Method)))
		return
	case target == nil:
		m.reply(strayRefusal(msg))
		return
	case !started:
		m.reply(busyReply(msg))
		return
	}
	target.ex.serveAsync(hctx, hctx, msg, m.send, nil)
}

// reply queues an answer that belongs to no call for the one replier
// goroutine, without blocking the reader; when replyQueue answers are
// already waiting, it is dropped. Only the reader calls it.
func (m *mux) reply(b []byte) {
	m.replierOnce.Do(func() {
		m.serving.Add(1)
		go m.replyLoop()
	})
	select {
	case m.replies <- b:
	default:
		m.env.msgWarn("dropped an answer to an upstream request: too many waiting")
	}
}

// replyLoop sends queued answers until the stream ends.
func (m *mux) replyLoop() {
	defer m.serving.Done()
	defer m.env.recoverPanic("upstream replier", nil)
	for {
		select {
		case b := <-m.replies:
			if err := m.send(m.ctx, b); err != nil {
				m.env.msgDebug("could not answer server request", "err", causeText(err))
			}
		case <-m.ctx.Done():
			return
		}
	}
}

// progressToken returns the raw progressToken of a notifications/progress
// params object, or "".
func progressToken(params []byte) string {
	if params == nil {
		return ""
	}
	return string(jsonrpc.Member(params, "progressToken"))
}

// subscriptionOf returns the raw subscriptionId a notification's _meta
// carries, or "".
func subscriptionOf(params []byte) string {
	if len(params) == 0 || params[0] != '{' {
		return ""
	}
	meta := jsonrpc.Member(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return ""
	}
	return string(jsonrpc.Member(meta, mcp.MetaSubscriptionID))
}
