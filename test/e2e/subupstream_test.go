package e2e

// subupstream_test.go: a subscription-capable upstream mirroring the one in
// LiteLLM's seed test test_modern_subscription_delivers_changes_between_calls_and_refreshes_tools
// (an SDK MCPServer with an InMemorySubscriptionBus and a control_listen
// middleware), built on the real go-sdk v1.8.0 server over real HTTP:
//
//   - tool change_tools and resource test://value; calling change_tools adds
//     a tool, prompt or resource named "added" (resource test://added) and
//     publishes tools/prompts/resources list_changed, or resources/updated
//     for test://value, according to Kind. go-sdk publishes: list changes go to
//     every legacy session and to every modern subscriptions/listen that opted
//     in; resources/updated goes to legacy sessions that resources/subscribe'd
//     test://value and to modern listens naming it.
//   - /mcp serves 2026-07-28 requests (header MCP-Protocol-Version >=
//     2026-07-28) with go-sdk's stateless StreamableHTTPHandler, which answers
//     server/discover and subscriptions/listen, and every other request with a
//     stateful handler (2025-11-25 sessions with a GET stream); /sse serves
//     legacy HTTP+SSE with go-sdk's SSEHandler when LegacySSE is set; /token is
//     an OAuth2 client_credentials token endpoint.
//   - resources/subscribe and resources/unsubscribe return an empty result.
//   - The seed's twists (no capabilities, failing, hanging or synchronised
//     server/discover probes, listeners closed by change_tools, a change during
//     the gateway's tools/list, one-tool pages) are a go-sdk receiving
//     middleware, as the seed's are an MCPServer middleware. Nothing is
//     written on the wire by hand: go-sdk itself acknowledges listens
//     (notifications/subscriptions/acknowledged), delivers list changes and
//     resources/updated over them, and ends a listen with its result when the
//     middleware cancels it.
//   - Unlike the seed's bus, which pushes every event to every legacy session,
//     go-sdk sends resources/updated only to legacy sessions that
//     resources/subscribe'd the URI (the spec's rule).
//
// An "upstream listener" is what the seed's ObservedBus counts: a modern
// subscriptions/listen in flight, or a legacy session's notification channel
// while it is open (its GET stream, or its HTTP+SSE connection).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subUpstreamOptions selects the seed's upstream twists.
type subUpstreamOptions struct {
	// Kind is what change_tools changes: tools, prompts, resources or updated.
	Kind string
	// LegacySSE also serves the legacy HTTP+SSE transport at /sse.
	LegacySSE bool
	// Pages pages tools/list one tool per page in the order the tools were
	// added, the cursor being the next offset, as the seed's middleware does
	// (go-sdk's own PageSize pages in name order, which would put "added"
	// first).
	Pages bool
	// NoCapabilities strips the capabilities from initialize and
	// server/discover and answers subscriptions/listen with -32601.
	NoCapabilities bool
	// ProbeError answers an armed server/discover with -32603.
	ProbeError bool
	// ProbeHang holds an armed server/discover until ReleaseProbes or the end.
	ProbeHang bool
	// ProbeBarrier holds an armed server/discover until all its parties arrive.
	ProbeBarrier *barrier
	// CloseListensOnChange makes change_tools end every upstream listener
	// (gracefully, with the listen's result) instead of changing anything.
	CloseListensOnChange bool
	// ChangeDuringList runs change_tools inside the first tools/list that
	// arrives while a listener is open, before the list is answered.
	ChangeDuringList bool
	// Renewal is the token endpoint's answer once StartRenewal was called:
	// "" (a fresh token), "renewal-scopes" (scope narrowed to "read") or
	// "renewal-failed" (401 invalid_client).
	Renewal string
}

// subUpstream is a running subscription upstream and what it observed.
type subUpstream struct {
	// URL is the server's base URL; the MCP endpoints are URL+"/mcp" and URL+"/sse".
	URL string

	opts   subUpstreamOptions
	server *mcp.Server

	mu             sync.Mutex
	open           int
	listenAuth     []string
	toolsListAuth  []string
	discovers      []http.Header
	limited        []string
	tokenForms     []url.Values
	executions     []string
	catalogReads   int
	probeArmed     bool
	armedAt        int // catalog reads when armed
	armedDiscovers int // discovers when armed
	probeGoal      int
	probeExercised bool
	probeArrivals  int
	renewalStarted bool
	changedInList  bool
	cancelListens  map[int]context.CancelFunc
	nextListen     int
	connected      chan struct{}
	connectedOnce  sync.Once
	hang           chan struct{}
	hangOnce       sync.Once
}

// barrier releases its waiters once n parties arrived (or it is opened).
type barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	release chan struct{}
	once    sync.Once
}

func newBarrier(n int) *barrier { return &barrier{n: n, release: make(chan struct{})} }

// wait arrives and blocks until all parties arrived, the barrier is opened, or ctx ends.
func (b *barrier) wait(ctx context.Context) {
	b.mu.Lock()
	b.arrived++
	if b.arrived >= b.n {
		b.openUp()
	}
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-ctx.Done():
	}
}

func (b *barrier) openUp() { b.once.Do(func() { close(b.release) }) }

// startSubscriptionUpstream serves the seed's subscription upstream until the end of the test.
func startSubscriptionUpstream(t *testing.T, opts subUpstreamOptions) *subUpstream {
	t.Helper()
	if opts.Kind == "" {
		opts.Kind = "tools"
	}
	u := &subUpstream{opts: opts, cancelListens: map[int]context.CancelFunc{},
		connected: make(chan struct{}), hang: make(chan struct{})}
	sopts := &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	u.server = mcp.NewServer(&mcp.Implementation{Name: "subscription-peer", Version: "1"}, sopts)
	u.server.AddTool(&mcp.Tool{Name: "change_tools", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(u.change(ctx)), nil
		})
	u.server.AddResource(&mcp.Resource{Name: "value", URI: "test://value"}, readText("test://value", "value"))
	u.server.AddReceivingMiddleware(u.control)

	modern := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.server },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	legacy := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.server },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= "2026-07-28" {
			modern.ServeHTTP(w, r)
			return
		}
		u.legacyStream(legacy).ServeHTTP(w, r)
	})
	if opts.LegacySSE {
		mux.Handle("/sse", u.legacyStream(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return u.server },
			&mcp.SSEOptions{DisableLocalhostProtection: true})))
	}
	mux.HandleFunc("POST /token", u.token)
	srv := httptest.NewServer(mux)
	u.URL = srv.URL
	t.Cleanup(func() {
		u.ReleaseProbes()
		if opts.ProbeBarrier != nil {
			opts.ProbeBarrier.openUp()
		}
		u.closeListens()
		for ss := range u.server.Sessions() {
			_ = ss.Close()
		}
		srv.CloseClientConnections()
		srv.Close()
	})
	return u
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func readText(uri, text string) mcp.ResourceHandler {
	return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: text}}}, nil
	}
}

// change is change_tools: it records the call and changes what Kind names.
func (u *subUpstream) change(ctx context.Context) string {
	u.record("change_tools")
	if u.opts.CloseListensOnChange {
		u.closeListens()
		return "ended"
	}
	added := func(context.Context) string { u.record("added"); return "new tool" }
	switch u.opts.Kind {
	case "tools":
		u.server.AddTool(&mcp.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return textResult(added(ctx)), nil
			})
	case "prompts":
		u.server.AddPrompt(&mcp.Prompt{Name: "added"}, func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: added(ctx)}}}}, nil
		})
	case "resources":
		u.server.AddResource(&mcp.Resource{Name: "added", URI: "test://added"},
			func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://added", Text: added(ctx)}}}, nil
			})
	default:
		_ = u.server.ResourceUpdated(context.WithoutCancel(ctx), &mcp.ResourceUpdatedNotificationParams{URI: "test://value"})
	}
	return "changed"
}

func (u *subUpstream) record(execution string) {
	u.mu.Lock()
	u.executions = append(u.executions, execution)
	u.mu.Unlock()
}

// control is the seed's control_listen middleware.
func (u *subUpstream) control(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		var hdr http.Header
		if extra := req.GetExtra(); extra != nil {
			hdr = extra.Header
		}
		if hdr.Get("X-Probe-Target") == "limited" {
			u.mu.Lock()
			u.limited = append(u.limited, method)
			u.mu.Unlock()
		}
		switch method {
		case "tools/list":
			u.mu.Lock()
			u.toolsListAuth = append(u.toolsListAuth, hdr.Get("Authorization"))
			race := u.opts.ChangeDuringList && u.open > 0 && !u.changedInList
			u.changedInList = u.changedInList || race
			u.mu.Unlock()
			if race {
				u.change(ctx)
			}
			if u.opts.Pages {
				return u.page(ctx, method, req, next)
			}
		case "server/discover":
			if err := u.probe(ctx, hdr); err != nil {
				return nil, err
			}

		case "subscriptions/listen":
			return u.listen(ctx, method, req, hdr, next)
		}
		res, err := next(ctx, method, req)
		switch method {
		case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
			u.mu.Lock()
			u.catalogReads++
			u.mu.Unlock()
		case "initialize":
			if r, ok := res.(*mcp.InitializeResult); ok && u.opts.NoCapabilities {
				r.Capabilities = &mcp.ServerCapabilities{}
			}
		}
		if r, ok := res.(*mcp.DiscoverResult); ok && u.opts.NoCapabilities {
			r.Capabilities = &mcp.ServerCapabilities{}
		}
		return res, err
	}
}

// page answers tools/list one tool per page, in the order the tools were
// added, with the next offset as the cursor.
func (u *subUpstream) page(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	lr, ok := req.(*mcp.ListToolsRequest)
	if !ok {
		return nil, fmt.Errorf("tools/list request of type %T", req)
	}
	offset := 0
	if lr.Params != nil && lr.Params.Cursor != "" {
		n, err := strconv.Atoi(lr.Params.Cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		offset = n
	}
	whole := &mcp.ListToolsRequest{Session: lr.Session, Params: &mcp.ListToolsParams{Meta: paramsMeta(lr.Params)}, Extra: lr.Extra}
	res, err := next(ctx, method, whole)
	u.mu.Lock()
	u.catalogReads++
	u.mu.Unlock()
	if err != nil {
		return nil, err
	}
	list, ok := res.(*mcp.ListToolsResult)
	if !ok {
		return res, nil
	}
	order := map[string]int{"change_tools": 0, "added": 1}
	slices.SortStableFunc(list.Tools, func(a, b *mcp.Tool) int { return order[a.Name] - order[b.Name] })
	all := list.Tools
	list.Tools, list.NextCursor = []*mcp.Tool{}, ""
	if offset < len(all) {
		list.Tools = all[offset : offset+1]
	}
	if offset+1 < len(all) {
		list.NextCursor = strconv.Itoa(offset + 1)
	}
	return list, nil
}

func paramsMeta(p *mcp.ListToolsParams) mcp.Meta {
	if p == nil {
		return nil
	}
	return p.Meta
}

// probe records a server/discover and, once armed and after the goal of
// catalog reads, fails, hangs or synchronises it.
func (u *subUpstream) probe(ctx context.Context, hdr http.Header) error {
	u.mu.Lock()
	u.discovers = append(u.discovers, hdr.Clone())
	armed := u.probeArmed && u.catalogReads >= u.probeGoal
	if armed {
		u.probeExercised = true
		u.probeArrivals++
	}
	u.mu.Unlock()
	if !armed {
		return nil
	}
	switch {
	case u.opts.ProbeBarrier != nil:
		u.opts.ProbeBarrier.wait(ctx)
	case u.opts.ProbeHang:
		select {
		case <-u.hang:
		case <-ctx.Done():
		}
	case u.opts.ProbeError:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Discovery unavailable"}
	}
	return nil
}

// listen serves a modern subscriptions/listen as an upstream listener that
// CloseListensOnChange can end.
func (u *subUpstream) listen(ctx context.Context, method string, req mcp.Request, hdr http.Header, next mcp.MethodHandler) (mcp.Result, error) {
	u.mu.Lock()
	u.listenAuth = append(u.listenAuth, hdr.Get("Authorization"))
	u.mu.Unlock()
	if u.opts.NoCapabilities {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Upstream has no subscription support"}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u.mu.Lock()
	id := u.nextListen
	u.nextListen++
	u.cancelListens[id] = cancel
	u.open++
	u.mu.Unlock()
	u.connectedOnce.Do(func() { close(u.connected) })
	defer func() {
		u.mu.Lock()
		delete(u.cancelListens, id)
		u.open--
		u.mu.Unlock()
	}()
	return next(ctx, method, req)
}

// legacyStream counts a legacy session's notification channel as a listener
// while it is open: the GET stream of a 2025-11-25 streamable HTTP session,
// or the GET /sse connection of an HTTP+SSE session (the session itself).
// That channel is where the seed's upstream bus pushes a legacy session's
// notifications.
func (u *subUpstream) legacyStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		u.mu.Lock()
		u.open++
		u.mu.Unlock()
		u.connectedOnce.Do(func() { close(u.connected) })
		defer func() {
			u.mu.Lock()
			u.open--
			u.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

func (u *subUpstream) closeListens() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, cancel := range u.cancelListens {
		cancel()
	}
}

// token is the client_credentials token endpoint; the form is recorded as posted.
func (u *subUpstream) token(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	u.mu.Lock()
	u.tokenForms = append(u.tokenForms, form)
	n, renewing := len(u.tokenForms), u.renewalStarted
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if renewing && u.opts.Renewal == "renewal-failed" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
		return
	}
	scope := "read write"
	if renewing && u.opts.Renewal == "renewal-scopes" {
		scope = "read"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("synthetic-renewal-%d", n),
		"token_type": "Bearer", "expires_in": 70, "scope": scope})
}

// MCPURL is the streamable HTTP endpoint.
func (u *subUpstream) MCPURL() string { return u.URL + "/mcp" }

// Change calls change_tools directly on the upstream (a modern stateless
// tools/call, not through the gateway).
func (u *subUpstream) Change(t *testing.T) {
	t.Helper()
	hdr := modernHeaders("tools/call", "change_tools")
	delete(hdr, "Authorization")
	status, _, body := rpc(t, u.MCPURL(), hdr,
		`{"jsonrpc":"2.0","id":"change","method":"tools/call","params":{"name":"change_tools","arguments":{},`+modernMeta+`}}`)
	res, _ := body["result"].(map[string]any)
	if status != http.StatusOK || res == nil || res["isError"] == true {
		t.Fatalf("change_tools on the upstream: %d %v", status, body)
	}
}

// Connected is closed once the first upstream listener opened.
func (u *subUpstream) Connected() <-chan struct{} { return u.connected }

// OpenListeners is the number of upstream listeners open now.
func (u *subUpstream) OpenListeners() int { u.mu.Lock(); defer u.mu.Unlock(); return u.open }

// ListenAuth is the Authorization header ("" if absent) of every subscriptions/listen received.
func (u *subUpstream) ListenAuth() []string { return u.snapshot(&u.listenAuth) }

// ToolsListAuth is the Authorization header ("" if absent) of every tools/list received.
func (u *subUpstream) ToolsListAuth() []string { return u.snapshot(&u.toolsListAuth) }

// Limited is the methods received with X-Probe-Target: limited.
func (u *subUpstream) Limited() []string { return u.snapshot(&u.limited) }

// Executions is the tools executed: change_tools and added, in order.
func (u *subUpstream) Executions() []string { return u.snapshot(&u.executions) }

// ClearLimited forgets the recorded X-Probe-Target: limited requests.
func (u *subUpstream) ClearLimited() { u.mu.Lock(); u.limited = nil; u.mu.Unlock() }

func (u *subUpstream) snapshot(s *[]string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(*s)
}

// Discovers is the headers of every server/discover received.
func (u *subUpstream) Discovers() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.discovers)
}

// TokenForms is every form posted to /token.
func (u *subUpstream) TokenForms() []url.Values {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.tokenForms)
}

// StartRenewal makes later token requests answer as Renewal says.
func (u *subUpstream) StartRenewal() { u.mu.Lock(); u.renewalStarted = true; u.mu.Unlock() }

// ArmProbes makes the server/discover probes that arrive after extraReads
// more catalog reads fail, hang or synchronise as the options say.
func (u *subUpstream) ArmProbes(extraReads int) {
	u.mu.Lock()
	u.probeArmed, u.probeGoal, u.probeExercised, u.probeArrivals = true, u.catalogReads+extraReads, false, 0
	u.armedAt, u.armedDiscovers = u.catalogReads, len(u.discovers)
	u.mu.Unlock()
}

// SinceArmed is how many catalog reads and server/discover requests arrived
// since ArmProbes.
func (u *subUpstream) SinceArmed() (catalogReads, discovers int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.catalogReads - u.armedAt, len(u.discovers) - u.armedDiscovers
}

// DisarmProbes lets later probes through and reports whether an armed probe
// arrived and how many.
func (u *subUpstream) DisarmProbes() (exercised bool, arrivals int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.probeArmed = false
	return u.probeExercised, u.probeArrivals
}

// ReleaseProbes frees hanging probes.
func (u *subUpstream) ReleaseProbes() { u.hangOnce.Do(func() { close(u.hang) }) }

// WaitListenersClosed fails the test unless no upstream listener is open within the given time.
func (u *subUpstream) WaitListenersClosed(t *testing.T, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); u.OpenListeners() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream listeners still open after %s", u.OpenListeners(), within)
		}
	}
}

// startPlainUpstream serves a plain go-sdk peer (stateless 2026-07-28 over
// HTTP) with one tool, prompt and resource and no list-changed or subscribe
// support, like the seed's sdk_interaction_peer.
func startPlainUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "modern-interactions", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Prompts: &mcp.PromptCapabilities{},
			Resources: &mcp.ResourceCapabilities{}},
	})
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("confirmed"), nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "confirm"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "confirmed"}}}}, nil
	})
	s.AddResource(&mcp.Resource{Name: "confirm", URI: "test://confirm"}, readText("test://confirm", "confirmed"))
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
