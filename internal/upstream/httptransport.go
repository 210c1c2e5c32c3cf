package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// maxResumes bounds how often one response stream is resumed with
// Last-Event-ID after the upstream closed it early (2025-11-25 SSE polling).
const maxResumes = 5

// httpTransport is streamable HTTP: one POST per message, the answer as JSON
// or as an SSE stream scoped to that request.
type httpTransport struct {
	env  *env
	d    *httpDialer // the upstream's URL and HTTP clients
	hdr  headerFunc  // this session's headers: static ones and credentials
	cred string      // names the session for its notifications (OwnerKey)
	// keepStream keeps the GET stream, once a call opened it, until the
	// session ends: the session is one caller's own, and its downstream
	// session hears what the upstream sends there without following it.
	keepStream bool

	mu        sync.Mutex
	sessionID string // legacy session, "" when none
	version   string // MCP-Protocol-Version to send, "" before negotiation
	ended     bool   // the upstream answered 404 on the session
	closed    bool   // close ran: the session was ended (or had nothing to end)

	// closeClient, when set, carries the DELETE instead of the pooled client.
	closeClient *http.Client

	side standalone // the legacy session's GET stream
}

// abandoned makes close send its DELETE over a fresh connection.
func (t *httpTransport) abandoned() {
	client := t.d.freshHTTP()
	t.mu.Lock()
	t.closeClient = client
	t.mu.Unlock()
}

func (t *httpTransport) sharedStream() bool { return false }

// standing is false: a session's GET stream comes and goes with its holders.
func (t *httpTransport) standing() bool { return false }

func (t *httpTransport) expired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// negotiated sets the MCP-Protocol-Version every later request carries.
func (t *httpTransport) negotiated(v string) {
	t.mu.Lock()
	t.version = v
	t.mu.Unlock()
}

func (t *httpTransport) state() (sessionID, version string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessionID, t.version
}

// newRequest builds a request with this session's headers. It also returns
// the minted credential it carries ("" for none), so a 401 can refresh it.
func (t *httpTransport) newRequest(ctx context.Context, method string, body []byte) (*http.Request, string, error) {
	return t.newRequestFor(ctx, method, body, nil)
}

// Header names as http.Header keys them (canonical form; TestHeaderKeys).
const (
	keySessionID       = "Mcp-Session-Id"
	keyProtocolVersion = "Mcp-Protocol-Version"
	keyMethod          = "Mcp-Method"
	keyName            = "Mcp-Name"
	keyContentType     = "Content-Type"
	keyAccept          = "Accept"
)

// newRequestFor is newRequest for the message r (nil: none), whose
// modern headers (revision, method, name, Mcp-Param-*) it sets too. The
// fields it sets share one backing array of values: Header.Set took an
// allocation for each, and another for each name not in canonical form.
func (t *httpTransport) newRequestFor(ctx context.Context, method string, body []byte, r *outgoing) (*http.Request, string, error) {
	h, minted, err := t.hdr(ctx)
	if err != nil {
		return nil, "", err
	}
	req, err := t.d.newRequest(ctx, method, body, h)
	if err != nil {
		return nil, "", badURL() // its text would repeat the URL
	}
	addHeaders(ctx, req.Header)
	f := fields{h: req.Header, vals: make([]string, 0, 6)}
	sid, ver := t.state()
	if sid != "" {
		f.set(keySessionID, sid)
	}
	if r != nil && r.modern {
		ver = mcp.Latest
	}
	if ver != "" {
		f.set(keyProtocolVersion, ver)
	}
	switch method {
	case http.MethodPost:
		f.set(keyContentType, "application/json")
		f.set(keyAccept, "application/json, text/event-stream")
	case http.MethodGet:
		f.set(keyAccept, "text/event-stream")
	}
	if r != nil && r.modern {
		f.set(keyMethod, r.method)
		if r.name != "" {
			f.set(keyName, mcp.EncodeHeaderValue(r.name))
		}
		for k, v := range r.header {
			req.Header[k] = v
		}
	}
	return req, minted, nil
}

// fields sets header fields (each to one value, as Header.Set does) from
// one backing array of values.
type fields struct {
	h    http.Header
	vals []string
}

// set sets the field named key, in canonical form, to v.
func (f *fields) set(key, v string) {
	f.vals = append(f.vals, v)
	n := len(f.vals)
	f.h[key] = f.vals[n-1 : n : n]
}

func (t *httpTransport) do(req *http.Request) (*http.Response, error) {
	resp, err := t.d.send(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if errors.Is(err, auth.ErrRedirectRefused) {
			return nil, protoErr("upstream redirected to another origin; request not forwarded", nil)
		}
		return nil, connErr("cannot reach upstream", err)
	}
	return resp, nil
}

func (t *httpTransport) call(ctx context.Context, ex *exchange, r outgoing) (*jsonrpc.Message, error) {
	release := t.track(ctx, ex)
	defer func() {
		// Stop taking requests from the GET stream for this call before
		// waiting for the ones it took.
		release()
		ex.handlers.Wait()
	}()
	req, minted, err := t.newRequestFor(ctx, http.MethodPost, r.body, &r)
	if err != nil {
		return nil, err
	}
	resp, err := t.do(req)
	if err != nil {
		return nil, err
	}
	// Every byte of the answer is read through the budget, and what the
	// answer holds is given back when the call returns.
	br := t.env.answerReader(ctx, resp.Body)
	if r.handshake {
		defer br.releaseHeld() // the session's, not an answer the caller gets
	} else {
		defer br.releaseAfterAnswer()
	}
	raw := resp.Body
	resp.Body = budgetBody{br, resp.Body}
	drained := false
	defer func() {
		if !drained {
			resp.Body.Close()
		}
	}()
	if r.handshake {
		if sid := resp.Header.Get(mcp.HeaderSessionID); sid != "" {
			if !mcp.ValidSessionID(sid) {
				return nil, protoErr("invalid MCP response: malformed session id", nil)
			}
			t.mu.Lock()
			t.sessionID = sid
			t.mu.Unlock()
		}
	}
	if err := t.checkStatus(resp, r, minted); err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		return nil, protoErr("invalid MCP response: request answered without a body", nil)
	}
	switch mediaType(resp) {
	case "application/json":
		return t.readJSON(resp, r.id)
	case "text/event-stream":
		m, err := t.readStream(ctx, ex, resp, r, br)
		if err == nil {
			drained = true
			drain(resp.Body, raw) // the answer is in: let the connection be reused
		}
		return m, err
	default:
		return nil, protoErr("unsupported content type from upstream", nil)
	}
}

func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// checkStatus turns every non-2xx answer into an error. A JSON-RPC error in
// the body is kept (it carries the protocol's meaning); any other body is
// dropped unread.
func (t *httpTransport) checkStatus(resp *http.Response, r outgoing, minted string) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return &StatusError{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate"), minted: minted}
	}
	rpc, aboutSession := t.errorBody(resp)
	sid, _ := t.state()
	onSession := !r.modern && sid != "" && !r.handshake
	if onSession && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest && aboutSession) {
		// The upstream no longer knows the session (it ended it, or it
		// restarted and answers the stale id with 404, or with a 400 that
		// names the session as SDK-based servers commonly do).
		t.mu.Lock()
		t.ended = true
		t.mu.Unlock()
		if rpc == nil {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Session terminated"}
		}
		return &RPCError{Err: rpc, HTTPStatus: resp.StatusCode, sessionEnded: true}
	}
	if resp.StatusCode == http.StatusNotFound && !r.modern {
		if rpc == nil {
			rpc = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Not Found"}
		}
		return &RPCError{Err: rpc, HTTPStatus: resp.StatusCode}
	}
	if rpc != nil {
		return &RPCError{Err: rpc, HTTPStatus: resp.StatusCode}
	}
	return &StatusError{Status: resp.StatusCode}
}

// maxErrorBody bounds what is read of an error answer's body.
const maxErrorBody = 64 << 10

// errorBody returns the JSON-RPC error an error answer carries, if any, and
// whether the answer names the session (a JSON-RPC error message, or a
// plain-text body, mentioning it). The body itself is never kept.
func (t *httpTransport) errorBody(resp *http.Response) (*jsonrpc.Error, bool) {
	mt := mediaType(resp)
	if mt != "application/json" && mt != "text/plain" {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, false
	}
	if mt == "text/plain" {
		return nil, namesSession(b)
	}
	m, err := jsonrpc.Decode(b)
	if err == nil && m.Error != nil {
		return m.Error, namesSession([]byte(m.Error.Message))
	}
	// An error object without a usable id ({"error":{…}} with no id, as
	// some SDK servers send for a request they could not route) is not
	// relayed, but its message may still name the session.
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		return nil, namesSession([]byte(e.Error.Message))
	}
	return nil, false
}

// namesSession reports whether an error text is about the session.
func namesSession(b []byte) bool {
	return bytes.Contains(bytes.ToLower(b), []byte("session"))
}

func (t *httpTransport) readJSON(resp *http.Response, id jsonrpc.ID) (*jsonrpc.Message, error) {
	b, err := readLimitedSized(resp.Body, t.env.maxMessage, resp.ContentLength)
	if err != nil {
		return nil, err
	}
	m, err := jsonrpc.Decode(b)
	if err != nil {
		return nil, protoErr("invalid MCP response", err)
	}
	if !responseTo(m, id) {
		return nil, protoErr("invalid MCP response: answer does not match the request id", nil)
	}
	return m, nil
}

// readInto reads r to its end into b, growing it only if r holds more than
// its capacity.
func readInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// preallocMax bounds the buffer allocated for an answer's announced size
// before any of it has been read (and taken from the byte budget): an
// upstream could announce much and send little.
const preallocMax = 1 << 20

// readLimitedSized reads at most max bytes of r into one buffer of the
// announced size (size < 0: unknown) when that is small, so an answer is not
// copied again and again as the buffer grows; larger answers grow with what
// is read.
func readLimitedSized(r io.Reader, max, size int64) ([]byte, error) {
	var b []byte
	var err error
	if size >= 0 && size <= min(max, preallocMax) {
		b, err = readInto(make([]byte, 0, size+1), io.LimitReader(r, max+1)) // +1: room to see the end
	} else {
		b, err = io.ReadAll(io.LimitReader(r, max+1))
	}
	if err != nil {
		if be := (*BudgetError)(nil); errors.As(err, &be) {
			return nil, be
		}
		return nil, connErr("connection was closed while reading the response", err)
	}
	if int64(len(b)) > max {
		return nil, protoErr("invalid MCP response: message too large", nil)
	}
	return b, nil
}

// readStream reads the request's SSE stream until its response arrives,
// serving server→client requests and notifications on the way. Its bytes
// are read through br; those of each message other than the answer are
// given back once it has been handed on.
func (t *httpTransport) readStream(ctx context.Context, ex *exchange, resp *http.Response, r outgoing, br *budgetReader) (*jsonrpc.Message, error) {
	// The handlers' context is made when the stream first carries a
	// request: most answers come alone, and a context per answer was a
	// handful of allocations.
	hctx := lazyCancel{parent: ctx}
	defer func() {
		hctx.stop()
		ex.handlers.Wait()
	}()
	body := resp.Body // call closes the first body; resumed ones are closed here
	defer func() {
		if body != resp.Body {
			body.Close()
		}
	}()
	rd := t.env.sseReader(br)
	defer t.env.putSSEReader(rd)
	retry := time.Duration(0)
	next := rd.Next
	if r.same != nil {
		next = rd.NextShared // decodeEvent copies what it keeps
	}
	for resumes := 0; ; br.releaseHeld() {
		ev, err := next()
		if err != nil {
			if be := (*BudgetError)(nil); errors.As(err, &be) {
				return nil, be
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			if errors.Is(err, sse.ErrEventTooLarge) {
				return nil, protoErr("invalid MCP response: message too large", nil)
			}
			if !errors.Is(err, io.EOF) {
				return nil, connErr("connection was closed", err)
			}
			lastID := rd.LastEventID()
			if r.modern || lastID == "" || resumes >= maxResumes {
				return nil, connErr("SSE stream ended before the response", nil)
			}
			resumes++
			resumed, err := t.resume(ctx, lastID, retry)
			if err != nil {
				return nil, err
			}
			if body != resp.Body {
				body.Close()
			}
			body, br.r = resumed, resumed
			rd.Reset(br)
			continue
		}
		if ev.Retry > 0 {
			retry = time.Duration(ev.Retry) * time.Millisecond
		}
		if (ev.Type != "" && ev.Type != "message") || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // other event types, and 2025-11-25 priming events (an id, no data)
		}
		m, err := decodeEvent(ev.Data, &r, r.same != nil)
		if err != nil {
			return nil, protoErr("invalid MCP response", err)
		}
		switch m.Kind() {
		case jsonrpc.KindResponse, jsonrpc.KindErrorResponse:
			if responseTo(m, r.id) {
				return m, nil
			}
			t.env.msgDebug("ignored response with an unmatched id", "method", r.method)
		case jsonrpc.KindNotification:
			ex.notify(m)
		case jsonrpc.KindRequest:
			t.serveOnStream(ctx, hctx.get(), ex, m)
		}
	}
}

// serveOnStream answers a server→client request that arrived on a request's
// own stream: ping and requests beyond the limits at once, others on a
// goroutine of their own (ex.handlers) with the handler context hctx.
func (t *httpTransport) serveOnStream(ctx, hctx context.Context, ex *exchange, m *jsonrpc.Message) {
	var reply []byte
	switch {
	case m.Method == mcp.MethodPing:
		// The upstream may be waiting on it to decide we are alive.
		reply = ex.serveRequest(ctx, m)
	case !ex.startHandler():
		reply = busyReply(m) // over the limits: no goroutine
	default:
		ex.serveAsync(hctx, hctx, m, t.send, nil)
		return
	}
	t.env.sendAnswer(ctx, t.send, m.Method, reply)
}

// resume reopens a response stream the upstream closed early, after the
// retry delay it asked for (bounded to 5 s).
func (t *httpTransport) resume(ctx context.Context, lastID string, retry time.Duration) (io.ReadCloser, error) {
	if retry > 5*time.Second {
		retry = 5 * time.Second
	}
	if retry > 0 {
		timer := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
	req, _, err := t.newRequest(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(mcp.HeaderLastEventID, lastID)
	resp, err := t.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		resp.Body.Close()
		return nil, connErr("SSE stream ended and could not be resumed", nil)
	}
	return resp.Body, nil
}

func (t *httpTransport) send(ctx context.Context, body []byte) error {
	req, minted, err := t.newRequest(ctx, http.MethodPost, body)
	if err != nil {
		return err
	}
	resp, err := t.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	br := t.env.answerReader(ctx, resp.Body) // an error body is buffered
	defer br.releaseHeld()
	resp.Body = budgetBody{br, resp.Body}
	if err := t.checkStatus(resp, outgoing{}, minted); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}

// close ends a legacy session with DELETE, once. A 405 (the upstream does not
// allow clients to end sessions) is not an error.
func (t *httpTransport) close(ctx context.Context) error {
	t.stopStandalone()
	t.mu.Lock()
	sid, ended, closed := t.sessionID, t.ended, t.closed
	t.closed = true
	client := t.d.client
	if t.closeClient != nil {
		client = t.closeClient
	}
	t.mu.Unlock()
	if sid == "" || ended || closed {
		return nil
	}
	req, _, err := t.newRequest(ctx, http.MethodDelete, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return connErr("could not end the upstream session", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		return &StatusError{Status: resp.StatusCode}
	}
	return nil
}

// streamEndGrace bounds the wait for a response stream's end after its answer.
const streamEndGrace = 20 * time.Millisecond
