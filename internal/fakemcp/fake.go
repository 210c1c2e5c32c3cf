package fakemcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Handler answers one JSON-RPC request's params with a result or an error.
type Handler = func(params json.RawMessage) (json.RawMessage, *jsonrpc.Error)

// Opts configures a Server; it is fixed once the fake starts.
type Opts struct {
	// Legacy makes the fake speak 2025-11-25 (initialize, session ids, 202
	// for notifications); otherwise it speaks 2026-07-28 (server/discover,
	// per-request _meta and headers).
	Legacy bool
	// Lists answers tools/list, prompts/list, resources/list and
	// resources/templates/list with these items (one page).
	Lists map[string][]json.RawMessage
	// TTLMs and CacheScope are the caching hints of list results; nil / ""
	// leave them out.
	TTLMs      *int64
	CacheScope string
	// Caps is the capabilities object; default tools, prompts, resources
	// and completions.
	Caps string
	// Instructions, when set, are sent in initialize and server/discover.
	Instructions string
	// Status, when set, answers every POST with this HTTP status, Challenge
	// as WWW-Authenticate and Body as a text body.
	Status    int
	Challenge string
	Body      string
	// Delay holds each matching method's answer back (or until the request
	// is abandoned).
	Delay map[string]time.Duration
	// Handlers answer other methods (or override the built-in ones).
	Handlers map[string]Handler
}

// Request is one JSON-RPC message as the fake saw it.
type Request struct {
	Method string
	Header http.Header
	Params json.RawMessage
}

// Server is an in-process MCP server over streamable HTTP that counts
// requests per method and records their headers and params.
type Server struct {
	opts Opts
	srv  *httptest.Server

	mu         sync.Mutex
	counts     map[string]int
	reqs       []Request
	sessions   int
	violations []string
}

// New starts a fake upstream for the test; it is closed, and its protocol
// violations reported with t.Errorf, when the test ends.
func New(t *testing.T, opts Opts) *Server {
	t.Helper()
	if opts.Caps == "" {
		opts.Caps = `{"tools":{},"prompts":{},"resources":{},"completions":{}}`
	}
	f := &Server{opts: opts, counts: map[string]int{}}
	// Registered first so it runs last, once the server is closed.
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, v := range f.violations {
			t.Errorf("fake upstream: %s", v)
		}
	})
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake's MCP endpoint.
func (f *Server) URL() string { return f.srv.URL + "/mcp" }

// Count is how many messages of method the fake got.
func (f *Server) Count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[method]
}

// Requests returns the recorded messages of method, oldest first.
func (f *Server) Requests(method string) []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Request
	for _, r := range f.reqs {
		if r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// Total counts every JSON-RPC message the fake got.
func (f *Server) Total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// Last returns the last request of method, failing when there is none.
func (f *Server) Last(t *testing.T, method string) Request {
	t.Helper()
	rs := f.Requests(method)
	if len(rs) == 0 {
		t.Fatalf("upstream got no %s", method)
	}
	return rs[len(rs)-1]
}

// Legacy reports whether the fake speaks 2025-11-25 (Opts.Legacy).
func (f *Server) Legacy() bool { return f.opts.Legacy }

// Close shuts the fake down early (e.g. to test an unreachable upstream);
// closing again at the end of the test is harmless.
func (f *Server) Close() { f.srv.Close() }

func (f *Server) violate(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
		return
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	m, err := jsonrpc.Decode(body)
	if err != nil {
		f.violate("invalid JSON-RPC message: %v", err)
		http.Error(w, "bad message", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.counts[m.Method]++
	f.reqs = append(f.reqs, Request{Method: m.Method, Header: r.Header.Clone(), Params: append(json.RawMessage(nil), m.Params...)})
	f.mu.Unlock()
	if d := f.opts.Delay[m.Method]; d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	if f.opts.Status != 0 {
		if f.opts.Challenge != "" {
			w.Header().Set("WWW-Authenticate", f.opts.Challenge)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(f.opts.Status)
		_, _ = io.WriteString(w, f.opts.Body)
		return
	}
	if m.Kind() != jsonrpc.KindRequest {
		if !f.opts.Legacy {
			f.violate("modern upstream got a %s (%s)", m.Kind(), m.Method)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	f.check(r, m)
	res, rpcErr := f.answer(w, m)
	w.Header().Set("Content-Type", "application/json")
	if rpcErr != nil {
		_, _ = w.Write(jsonrpc.EncodeError(m.ID, rpcErr))
		return
	}
	_, _ = w.Write(jsonrpc.EncodeResult(m.ID, res))
}

// check records protocol violations of the gateway's client.
func (f *Server) check(r *http.Request, m *jsonrpc.Message) {
	if f.opts.Legacy {
		if m.Method != mcp.MethodInitialize && r.Header.Get(mcp.HeaderSessionID) == "" {
			f.violate("legacy %s without a session id", m.Method)
		}
		return
	}
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != mcp.V20260728 {
		f.violate("modern %s with MCP-Protocol-Version %q", m.Method, v)
	}
	if v := r.Header.Get(mcp.HeaderMethod); v != m.Method {
		f.violate("modern %s with Mcp-Method %q", m.Method, v)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.Meta[mcp.MetaProtocolVersion] == nil {
		f.violate("modern %s without _meta protocolVersion", m.Method)
	}
}

func (f *Server) answer(w http.ResponseWriter, m *jsonrpc.Message) (json.RawMessage, *jsonrpc.Error) {
	if h := f.opts.Handlers[m.Method]; h != nil {
		return h(m.Params)
	}
	switch m.Method {
	case mcp.MethodInitialize:
		if !f.opts.Legacy {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")
		}
		f.mu.Lock()
		f.sessions++
		sid := fmt.Sprintf("sess-%d", f.sessions)
		f.mu.Unlock()
		w.Header().Set(mcp.HeaderSessionID, sid)
		return json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":` + f.opts.Caps + f.instructions() + `,"serverInfo":{"name":"fake-legacy","version":"1"}}`), nil
	case mcp.MethodDiscover:
		if f.opts.Legacy {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")
		}
		return json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":` + f.opts.Caps +
			f.instructions() + `,"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake-modern","version":"1"}}}`), nil
	}
	if key := ListKey(m.Method); key != "" {
		items := f.opts.Lists[m.Method]
		if items == nil {
			items = []json.RawMessage{}
		}
		res := map[string]any{key: items}
		if !f.opts.Legacy {
			res["resultType"] = "complete"
		}
		if f.opts.TTLMs != nil {
			res["ttlMs"] = *f.opts.TTLMs
		}
		if f.opts.CacheScope != "" {
			res["cacheScope"] = f.opts.CacheScope
		}
		b, _ := json.Marshal(res)
		return b, nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: %s", m.Method)
}

// instructions is the instructions member of initialize and discover
// results, with its leading comma, or "".
func (f *Server) instructions() string {
	if f.opts.Instructions == "" {
		return ""
	}
	return `,"instructions":` + string(jsonrpc.AppendString(nil, f.opts.Instructions))
}

// TTL returns a pointer to ms, for Opts.TTLMs.
func TTL(ms int64) *int64 { return &ms }

// Tools builds tools/list items named names.
func Tools(names ...string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(names))
	for _, n := range names {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"tool %s","inputSchema":{"type":"object"}}`, n, n)))
	}
	return out
}

// Prompts builds prompts/list items named names.
func Prompts(names ...string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(names))
	for _, n := range names {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"prompt %s"}`, n, n)))
	}
	return out
}

// Resources builds resources/list items with the given URIs.
func Resources(uris ...string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(uris))
	for i, u := range uris {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"uri":%q,"name":"res%d"}`, u, i)))
	}
	return out
}

// Templates builds resources/templates/list items with the given URI templates.
func Templates(ts ...string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(ts))
	for i, u := range ts {
		out = append(out, json.RawMessage(fmt.Sprintf(`{"uriTemplate":%q,"name":"tpl%d"}`, u, i)))
	}
	return out
}

// ListKey names the array member of each list method's result ("" for other methods).
func ListKey(method string) string {
	switch method {
	case mcp.MethodToolsList:
		return "tools"
	case mcp.MethodPromptsList:
		return "prompts"
	case mcp.MethodResourcesList:
		return "resources"
	case mcp.MethodResourcesTemplatesList:
		return "resourceTemplates"
	}
	return ""
}
