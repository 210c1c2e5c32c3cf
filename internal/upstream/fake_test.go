package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// fakeUpstream is an in-process HTTP server for faults real servers will not
// produce. It records every request it receives.
type fakeUpstream struct {
	t   *testing.T
	srv *httptest.Server

	mu   sync.Mutex
	log  []seen
	next func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message)
}

// seen is one request as the fake saw it.
type seen struct {
	HTTPMethod string
	Method     string // JSON-RPC method, or "" for responses and non-POSTs
	Session    string
	Header     http.Header
	Body       string
}

func newFake(t *testing.T, h func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message)) *fakeUpstream {
	f := &fakeUpstream{t: t, next: h}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := seen{HTTPMethod: r.Method, Session: r.Header.Get("Mcp-Session-Id"), Header: r.Header.Clone(), Body: string(body)}
	var m *jsonrpc.Message
	if r.Method == http.MethodPost {
		var err error
		m, err = jsonrpc.Decode(body)
		if err != nil {
			f.t.Errorf("fake upstream got an invalid message: %v", err)
			http.Error(w, "bad", 400)
			return
		}
		s.Method = m.Method
	}
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
	switch r.Method {
	case http.MethodPost:
		f.next(w, r, m)
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (f *fakeUpstream) url() string { return f.srv.URL + "/mcp" }

func (f *fakeUpstream) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.log...)
}

// calls lists "METHOD session" for each JSON-RPC request (not notifications,
// not responses), one line per request.
func (f *fakeUpstream) calls() []string {
	var out []string
	for _, s := range f.requests() {
		if s.Method == "" || strings.HasPrefix(s.Method, "notifications/") {
			continue
		}
		out = append(out, s.Method+" "+orNone(s.Session))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeSSE(w http.ResponseWriter, events ...[]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, e := range events {
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

func initResult(version string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"},"instructions":"  upstream says hello "}`, version))
}

// legacyServer answers initialize (minting session ids s1, s2, …) and
// notifications, and hands everything else to h.
func legacyServer(t *testing.T, version string, h func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message)) *fakeUpstream {
	var mu sync.Mutex
	n := 0
	return newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(200)
		case m != nil && m.Method == "initialize":
			mu.Lock()
			n++
			sid := fmt.Sprintf("s%d", n)
			mu.Unlock()
			w.Header().Set("Mcp-Session-Id", sid)
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult(version)))
		case m != nil && m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(http.StatusAccepted)
		default:
			h(w, r, m)
		}
	})
}

func toolsPage(id jsonrpc.ID, names ...string) []byte {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, n))
	}
	return jsonrpc.EncodeResult(id, json.RawMessage(`{"tools":[`+strings.Join(parts, ",")+`]}`))
}
