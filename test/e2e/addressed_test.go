package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerPeer is a go-sdk MCP server over real HTTP that records the headers
// of every request it receives.
type headerPeer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

// newHeaderPeer serves a go-sdk server with one tool, "whoami", that
// answers name; check, when set, may refuse a request (401) before the
// server sees it.
func newHeaderPeer(t *testing.T, name string, check func(*http.Request) bool) *headerPeer {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name}}}, nil
		})
	// Stateless serves both eras (a modern caller has no session).
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	p := &headerPeer{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Header.Clone())
		p.mu.Unlock()
		if check != nil && !check(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// drain returns the headers seen since the last drain.
func (p *headerPeer) drain() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.seen
	p.seen = nil
	return out
}

// headersTransport adds fixed headers to every request.
type headersTransport map[string]string

func (h headersTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// sdkSessionWith is sdkSession with the caller's own headers.
func sdkSessionWith(t *testing.T, endpoint, version string, hdr map[string]string) *sdk.ClientSession {
	t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headersTransport(hdr)}, DisableStandaloneSSE: true}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect %s (%s): %v", endpoint, version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestAddressedHeadersReachOnlyTheirServer: x-mcp-{server}-{header} headers
// reach the named server alone, as {header}, on the aggregate tools/list
// fan-out and on tools/call, for callers of both eras and upstreams of both
// eras; the caller's gateway key reaches neither.
func TestAddressedHeadersReachOnlyTheirServer(t *testing.T) {
	alpha, beta := newHeaderPeer(t, "alpha", nil), newHeaderPeer(t, "beta", nil)
	gw := startGateway(t, fmt.Sprintf(`general_settings:
  master_key: %s
mcp_servers:
  alpha:
    url: %s/mcp
    protocol_version: "2025-11-25"
    extra_headers: [X-Mcp-Beta-X-Tenant]
  beta:
    url: %s/mcp
    protocol_version: "2026-07-28"
    alias: Bravo
`, testKey, alpha.srv.URL, beta.srv.URL), nil)
	hdr := map[string]string{
		"Authorization":              "Bearer " + testKey,
		"x-mcp-alpha-authorization":  "Bearer alpha-secret",
		"X-MCP-ALPHA-X-Tenant":       "tenant-a",
		"x-mcp-bravo-x-tenant":       "tenant-b",
		"x-mcp-beta-authorization":   "Bearer beta-secret",
		"x-mcp-nosuch-authorization": "Bearer nobody",
	}
	want := map[*headerPeer][2]string{alpha: {"Bearer alpha-secret", "tenant-a"}, beta: {"Bearer beta-secret", "tenant-b"}}
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			alpha.drain()
			beta.drain()
			cs := sdkSessionWith(t, gw.url+"/mcp", version, hdr)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || !toolNames(tools.Tools)["alpha-whoami"] || !toolNames(tools.Tools)["beta-whoami"] {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			for _, name := range []string{"alpha-whoami", "beta-whoami"} {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || textOf(res) != strings.TrimSuffix(name, "-whoami") {
					t.Fatalf("call %s: %v %v", name, res, err)
				}
			}
			for p, w := range want {
				seen := p.drain()
				if len(seen) == 0 {
					t.Fatalf("%s saw no request", w[1])
				}
				for _, h := range seen {
					if got := h.Get("Authorization"); got != w[0] {
						t.Fatalf("upstream expecting %q got Authorization %q", w[0], got)
					}
					if got := h.Values("X-Tenant"); len(got) != 1 || got[0] != w[1] {
						t.Fatalf("upstream expecting %q got X-Tenant %q", w[1], got)
					}
					for k := range h {
						if strings.HasPrefix(strings.ToLower(k), "x-mcp-") {
							t.Fatalf("upstream saw the caller's addressed header %s", k)
						}
					}
				}
			}
		})
	}
}
