package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// logBuffer collects the client's log lines (JSON, debug and up).
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// lines returns the log lines at level whose text contains sub.
func (l *logBuffer) lines(level, sub string) []string {
	var out []string
	for _, ln := range strings.Split(l.String(), "\n") {
		if strings.Contains(ln, `"level":"`+level+`"`) && strings.Contains(ln, sub) {
			out = append(out, ln)
		}
	}
	return out
}

func TestRequestTimeoutIsOursAndWarnsOnce(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		<-r.Context().Done() // never answers
	})
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", RequestTimeout: 500 * time.Millisecond, Logger: logs.logger()})
	start := time.Now()
	_, err := c.CallTool(context.Background(), "slow", json.RawMessage(`{}`), Options{})
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("took %s", elapsed)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "timed out after 0.5s") {
		t.Fatalf("err = %v", err)
	}
	if cl := Classify(err); cl.Fault != FaultTimeout || cl.HTTPStatus != 504 {
		t.Fatalf("classified %+v", cl)
	}
	warn := logs.lines("WARN", "timed out after 0.5s")
	if len(warn) != 1 || !strings.Contains(warn[0], f.url()) {
		t.Fatalf("warnings = %v, want one naming %s", warn, f.url())
	}
	// The upstream was told the request is abandoned.
	var cancelled bool
	for _, s := range f.requests() {
		cancelled = cancelled || (s.Method == "notifications/cancelled" && s.Session == "s1")
	}
	if !cancelled {
		t.Fatal("no notifications/cancelled after the timeout")
	}
}

func TestUpstream408IsNotOurTimeout(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: 408, Message: "Request timed out upstream"}))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	_, err := c.CallTool(context.Background(), "t", nil, Options{})
	var re *RPCError
	if !errors.As(err, &re) || re.Code() != 408 {
		t.Fatalf("err = %v", err)
	}
	if errors.As(err, new(*TimeoutError)) || Classify(err).Fault == FaultTimeout || Classify(err).HTTPStatus == 504 {
		t.Fatalf("a JSON-RPC 408 was classified as our timeout: %+v", Classify(err))
	}
}

func TestClassifyIsTotal(t *testing.T) {
	cases := []struct {
		err    error
		fault  Fault
		status int
	}{
		{&StatusError{Status: 401, Challenge: "Bearer"}, FaultAuthRequired, 401},
		{&StatusError{Status: 403}, FaultForbidden, 403},
		{&StatusError{Status: 429}, FaultUpstreamError, 429},
		{&StatusError{Status: 503}, FaultUpstreamError, 503},
		{&StatusError{Status: 500}, FaultUpstreamError, 502},
		{&TimeoutError{Budget: time.Second}, FaultTimeout, 504},
		{connErr("cannot reach upstream", errors.New("connection refused")), FaultUnreachable, 502},
		{protoErr("invalid MCP response", nil), FaultUpstreamError, 502},
		{&RPCError{Err: &jsonrpc.Error{Code: -32603, Message: "x"}}, FaultUpstreamError, 502},
		{context.DeadlineExceeded, FaultTimeout, 504},
		{errors.New("something odd"), FaultInternal, 500},
		{errors.Join(connErr("x", nil), fmt.Errorf("wrapped: %w", &StatusError{Status: 403, Challenge: "c2"}), &StatusError{Status: 401}), FaultForbidden, 403},
	}
	for _, tc := range cases {
		cl := Classify(tc.err)
		if cl.Fault != tc.fault || cl.HTTPStatus != tc.status {
			t.Errorf("Classify(%v) = %+v, want %s/%d", tc.err, cl, tc.fault, tc.status)
		}
	}
	if cl := Classify(errors.Join(errors.New("a"), &StatusError{Status: 401, Challenge: `Bearer resource_metadata="x"`})); cl.Challenge != `Bearer resource_metadata="x"` {
		t.Fatalf("challenge lost: %+v", cl)
	}
}

// pagingServer serves tools/list pages from a cursor→page map and counts
// requests.
func pagingServer(t *testing.T, pages map[string]string, n *atomic.Int32) *fakeUpstream {
	return legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		n.Add(1)
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(m.Params, &p)
		page, ok := pages[p.Cursor]
		switch {
		case !ok:
			t.Errorf("unexpected cursor %q", p.Cursor)
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32602, Message: "bad cursor"}))
		case page == "hang":
			<-r.Context().Done()
		case strings.HasPrefix(page, "error:"):
			var code int64
			fmt.Sscan(strings.TrimPrefix(page, "error:"), &code)
			writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: code, Message: "page failed"}))
		case page == "401":
			http.Error(w, "no", 401)
		default:
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(page)))
		}
	})
}

func TestPagingLimits(t *testing.T) {
	cases := []struct {
		name     string
		pages    map[string]string
		maxPages int
		timeout  time.Duration
		requests int32
		ok       int // tools expected when the walk succeeds; -1 when it must fail
		check    func(error) bool
	}{
		{"empty middle page continues; empty cursor ends", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"m"}`, "m": `{"tools":[],"nextCursor":"z"}`, "z": `{"tools":[{"name":"b"}],"nextCursor":""}`}, 0, 0, 3, 2, nil},
		{"null cursor ends", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":null}`}, 0, 0, 1, 1, nil},
		{"exhaustion exactly at the cap", map[string]string{"": `{"tools":[],"nextCursor":"last-page"}`, "last-page": `{"tools":[],"nextCursor":null}`}, 2, 0, 2, 0, nil},
		{"repeated cursor", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"same"}`, "same": `{"tools":[{"name":"b"}],"nextCursor":"same"}`}, 0, 0, 2, -1, isIncomplete},
		{"cycle 1-2-1", map[string]string{"": `{"tools":[],"nextCursor":"1"}`, "1": `{"tools":[],"nextCursor":"2"}`, "2": `{"tools":[],"nextCursor":"1"}`}, 3, 0, 3, -1, isIncomplete},
		{"cap reached with a next cursor", map[string]string{"": `{"tools":[],"nextCursor":"a"}`, "a": `{"tools":[],"nextCursor":"b"}`}, 2, 0, 2, -1, isIncomplete},
		{"later page -32601", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"x"}`, "x": "error:-32601"}, 0, 0, 2, -1, isRPC(-32601)},
		{"later page -32603", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"x"}`, "x": "error:-32603"}, 0, 0, 2, -1, isRPC(-32603)},
		{"later page 401", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"x"}`, "x": "401"}, 0, 0, 2, -1, isStatus(401)},
		{"walk deadline", map[string]string{"": `{"tools":[{"name":"a"}],"nextCursor":"x"}`, "x": "hang"}, 0, 300 * time.Millisecond, 2, -1, isTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			f := pagingServer(t, tc.pages, &n)
			var logs logBuffer
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxPages: tc.maxPages, ListTimeout: tc.timeout, Logger: logs.logger()})
			tools, err := c.ListTools(context.Background(), Options{})
			if tc.ok >= 0 {
				if err != nil || len(tools) != tc.ok {
					t.Fatalf("tools=%s err=%v", tools, err)
				}
			} else {
				if err == nil || tools != nil || !tc.check(err) {
					t.Fatalf("tools=%s err=%v: want a failed walk and no partial list", tools, err)
				}
			}
			if got := n.Load(); got != tc.requests {
				t.Fatalf("%d list requests, want %d", got, tc.requests)
			}
			for cursor := range tc.pages {
				if cursor != "" && strings.Contains(logs.String(), strconv.Quote(cursor)) {
					t.Fatalf("cursor %q appears in the log", cursor)
				}
			}
		})
	}
}

func isIncomplete(err error) bool { return errors.Is(err, ErrIncompleteList) }
func isTimeout(err error) bool    { return errors.As(err, new(*TimeoutError)) }
func isRPC(code int64) func(error) bool {
	return func(err error) bool { re := rpcErr(err); return re != nil && re.Code() == code }
}
func isStatus(code int) func(error) bool {
	return func(err error) bool { var se *StatusError; return errors.As(err, &se) && se.Status == code }
}

func TestSecretsNeverInErrorsOrLogs(t *testing.T) {
	const marker = "SECRET-MARKER-7f3a"
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(500)
		fmt.Fprintf(w, "stack trace mentioning %s", marker)
	})
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: f.url() + "?token=" + marker, ProtocolVersion: "2025-11-25", Logger: logs.logger(),
		Auth: auth.PolicyConfig{AuthType: "bearer_token", AuthValue: marker}})
	args := json.RawMessage(`{"ssn":"` + marker + `"}`)
	_, err := c.CallTool(context.Background(), "lookup", args, Options{})
	if err == nil {
		t.Fatal("expected an error")
	}
	for _, text := range []string{err.Error(), Classify(err).Message, logs.String()} {
		if strings.Contains(text, marker) {
			t.Fatalf("secret marker leaked: %s", text)
		}
	}
	// A timeout names the upstream, but not the credential in its URL, nor
	// one in a forwarded header whose key is not canonical.
	hang := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		<-r.Context().Done()
	})
	c3 := newClient(t, Config{Name: "slow", URL: hang.url() + "?token=" + marker, ProtocolVersion: "2025-11-25", Logger: logs.logger(), RequestTimeout: 300 * time.Millisecond})
	_, err = c3.CallTool(context.Background(), "lookup", args, Options{Header: http.Header{"x-user-token": {marker}}, LogErrors: true})
	if !errors.As(err, new(*TimeoutError)) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	warn := logs.lines("WARN", "timed out after 0.3s")
	if len(warn) != 1 || !strings.Contains(warn[0], hang.url()) {
		t.Fatalf("warnings = %v, want one naming %s", warn, hang.url())
	}
	for _, text := range []string{err.Error(), Classify(err).Message, logs.String()} {
		if strings.Contains(text, marker) {
			t.Fatalf("secret marker leaked through a timeout: %s", text)
		}
	}
	// An unreachable upstream whose URL carries a credential.
	c2 := newClient(t, Config{Name: "down", URL: "http://127.0.0.1:1/mcp?token=" + marker, ProtocolVersion: "2025-11-25", Logger: logs.logger()})
	_, err = c2.CallTool(context.Background(), "lookup", args, Options{})
	if err == nil || strings.Contains(err.Error(), marker) || strings.Contains(logs.String(), marker) {
		t.Fatalf("secret marker leaked through a connection error: %v", err)
	}
	if Classify(err).Fault != FaultUnreachable {
		t.Fatalf("classified %+v", Classify(err))
	}
}

func TestCancelledCallOnSharedSessionTellsUpstream(t *testing.T) {
	release := make(chan struct{})
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if m.Method == "tools/call" {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		writeJSON(w, 200, toolsPage(m.ID, "a"))
	})
	defer close(release)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, "slow", json.RawMessage(`{}`), Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
	var callID, cancelledID string
	for _, s := range f.requests() {
		m, _ := jsonrpc.Decode([]byte(s.Body))
		switch s.Method {
		case "tools/call":
			callID = m.ID.String()
		case "notifications/cancelled":
			cancelledID = string(jsonrpc.Member(m.Params, "requestId"))
		}
	}
	if callID == "" || cancelledID != callID {
		t.Fatalf("notifications/cancelled for %q, call id %q", cancelledID, callID)
	}
	// The session stays usable: no new initialize.
	if _, err := c.ListTools(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls(), ","); got != "initialize None,tools/call s1,tools/list s1" {
		t.Fatalf("requests = %s", got)
	}
}

func TestCancelledOwnSessionsAreDeleted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		delete string // ok, hang, 500
		// slowClose makes ending the abandoned request itself take 1s (its
		// elicitation handler ignores cancellation for that long): the
		// close and the DELETE must still share one cleanup deadline.
		slowClose bool
	}{
		{"one call", 1, "ok", false},
		{"five calls", 5, "ok", false},
		{"five calls, DELETE hangs", 5, "hang", false},
		{"one call, DELETE answers 500", 1, "500", false},
		{"one call, 1s close, DELETE hangs", 1, "hang", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			var mu sync.Mutex
			callAddrs := map[string]bool{}
			var deleteAddrs []string
			var sid atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				mu.Lock()
				callAddrs[r.RemoteAddr] = true
				mu.Unlock()
				switch {
				case m.Method == "initialize":
					w.Header().Set("Mcp-Session-Id", fmt.Sprintf("own-%d", sid.Add(1)))
					writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
				case m.Kind() != jsonrpc.KindRequest:
					w.WriteHeader(202)
				default:
					if tc.slowClose {
						w.Header().Set("Content-Type", "text/event-stream")
						w.WriteHeader(200)
						fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeRequest(jsonrpc.IntID(1), "elicitation/create", json.RawMessage(`{"message":"?"}`)))
						w.(http.Flusher).Flush()
					}
					select { // the call never finishes
					case <-r.Context().Done():
					case <-stop:
					}
				}
			})
			f.srv.Config.Handler = deleteHook(f.srv.Config.Handler, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				deleteAddrs = append(deleteAddrs, r.RemoteAddr)
				mu.Unlock()
				switch tc.delete {
				case "hang":
					select {
					case <-r.Context().Done():
					case <-stop:
					}
				case "500":
					http.Error(w, "boom", 500)
				}
			})
			defer close(stop)
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
			start := time.Now()
			var wg sync.WaitGroup
			errs := make([]error, tc.n)
			for i := range tc.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					defer cancel()
					opts := Options{Ephemeral: true, Header: http.Header{"Authorization": {fmt.Sprintf("Bearer caller-%d", i)}}}
					if tc.slowClose {
						opts.Interactions = &Interactions{Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
							time.Sleep(time.Second)
							return json.RawMessage(`{"action":"decline"}`), nil
						}}
					}
					_, errs[i] = c.CallTool(ctx, "slow", json.RawMessage(`{}`), opts)
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			// The callers' deadline is 0.2s and cleanup has one 5s budget
			// from then, for the close and the DELETE together.
			if elapsed > 5800*time.Millisecond {
				t.Fatalf("cleanup took %s, want it bounded near 5.2s", elapsed)
			}
			if tc.delete == "hang" && elapsed < 4800*time.Millisecond {
				t.Fatalf("returned after %s: the hanging DELETE was not waited for", elapsed)
			}
			if tc.delete != "hang" && elapsed > 3*time.Second {
				t.Fatalf("cleanup took %s without a hanging DELETE", elapsed)
			}
			for _, err := range errs {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want the original deadline error", err)
				}
			}
			mu.Lock()
			if len(deleteAddrs) != tc.n {
				t.Fatalf("%d DELETEs, want %d", len(deleteAddrs), tc.n)
			}
			seenDel := map[string]bool{}
			for _, a := range deleteAddrs {
				if callAddrs[a] || seenDel[a] {
					t.Fatalf("DELETE reused connection %s", a)
				}
				seenDel[a] = true
			}
			mu.Unlock()
			// The client stays usable.
			if _, err := c.Info(context.Background(), Options{}); err != nil {
				t.Fatalf("client unusable afterwards: %v", err)
			}
		})
	}
}

// deleteHook routes DELETE requests to del and everything else to next.
func deleteHook(next http.Handler, del http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			del(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func TestEphemeralSessionEndsAfterSuccess(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	if _, err := c.CallTool(context.Background(), "t", nil, Options{Ephemeral: true}); err != nil {
		t.Fatal(err)
	}
	var deletes int
	for _, s := range f.requests() {
		if s.HTTPMethod == http.MethodDelete && s.Session == "s1" {
			deletes++
		}
	}
	if deletes != 1 {
		t.Fatalf("%d DELETEs for the operation's own session, want 1", deletes)
	}
}

// A handshake step that never answers fails on our own budget like any other
// request: a TimeoutError and exactly one warning, never a bare deadline.
func TestHandshakeTimeoutsAreOurs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		hang    string // the method the upstream never answers
		request time.Duration
		list    time.Duration
	}{
		{"initialize", "2025-11-25", "initialize", 300 * time.Millisecond, 0},
		{"auto probe", "", "server/discover", 0, 300 * time.Millisecond},
		{"modern discover", "2026-07-28", "server/discover", 0, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				switch {
				case m.Method == tc.hang:
					<-r.Context().Done()
				case m.Kind() != jsonrpc.KindRequest:
					w.WriteHeader(http.StatusAccepted)
				default:
					writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
				}
			})
			var logs logBuffer
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: tc.version, RequestTimeout: tc.request, ListTimeout: tc.list, Logger: logs.logger()})
			start := time.Now()
			_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{})
			if elapsed := time.Since(start); elapsed > 3*time.Second {
				t.Fatalf("took %s", elapsed)
			}
			var te *TimeoutError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), "timed out after 0.3s") {
				t.Fatalf("err = %v, want our 0.3s timeout", err)
			}
			if cl := Classify(err); cl.Fault != FaultTimeout || cl.HTTPStatus != 504 {
				t.Fatalf("classified %+v", cl)
			}
			if warn := logs.lines("WARN", "timed out after"); len(warn) != 1 || !strings.Contains(warn[0], "0.3s") || !strings.Contains(warn[0], f.url()) {
				t.Fatalf("warnings = %v, want exactly one naming the server and 0.3s", warn)
			}
		})
	}
}
