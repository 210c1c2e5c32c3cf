package front

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

const testKey = "sk-front-test-key-0123456789"

// upSpec is one upstream of a test front.
type upSpec struct {
	name   string
	fake   *fakemcp.Server
	server gateway.Server // ExtraHeaders, Delegate; Name and Client filled in
	auth   auth.PolicyConfig
	url    string // a real peer's endpoint, used when fake is nil
	// timeout, when set, replaces the upstream request timeout (10s).
	timeout time.Duration
}

// frontSpec builds a test front.
type frontSpec struct {
	ups     []upSpec
	webhook string // custom_auth URL; "" means the master key testKey
	cfg     MCPConfig
	clock   func() time.Time // the sessions' clock; nil means time.Now
	// admission, when set, wraps the routes in admit.Handler as internal/app does.
	admission *admit.Config
}

// testFront is a running front over real HTTP.
type testFront struct {
	url string
	mcp *MCP
}

func newTestFront(t *testing.T, spec frontSpec) *testFront {
	t.Helper()
	var (
		servers []*gateway.Server
		cats    []*catalog.Server
		pols    []policy.Server
	)
	var gwRef struct {
		sync.Mutex
		g *gateway.Gateway
	}
	for _, u := range spec.ups {
		name := u.name
		url := u.url
		if u.fake != nil {
			url = u.fake.URL()
		}
		ucfg := upstream.Config{Name: u.name, URL: url, ProtocolVersion: mcp.V20260728, Auth: u.auth,
			RequestTimeout: 10 * time.Second, ListTimeout: 10 * time.Second,
			OnNotification: func(session, method string, params json.RawMessage) {
				gwRef.Lock()
				g := gwRef.g
				gwRef.Unlock()
				if g != nil {
					g.Notify(name, session, method, params)
				}
			}}
		if u.fake != nil && u.fake.Legacy() {
			ucfg.ProtocolVersion = mcp.V20251125
		}
		if u.fake == nil {
			ucfg.ProtocolVersion = "" // a real peer: the era is probed
		}
		if u.timeout > 0 {
			ucfg.RequestTimeout = u.timeout
		}
		c, err := upstream.New(ucfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		s := u.server
		s.Name, s.Client = u.name, c
		servers = append(servers, &s)
		cats = append(cats, &catalog.Server{Name: u.name, Client: c})
		pols = append(pols, policy.Server{Name: u.name, AllowAllKeys: true})
	}
	sealer, err := seal.New("front-test-salt-key-0123456789abcdef", SessionPurpose, catalog.SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(gateway.Config{Servers: servers, Policy: policy.New(pols, policy.Options{}),
		Catalog: catalog.New(catalog.Config{Servers: cats, Sealer: sealer}),
		Info:    mcp.Implementation{Name: "mcpgw", Version: "test"}, Advertised: []string{mcp.V20260728, mcp.V20251125}})
	gwRef.Lock()
	gwRef.g = g
	gwRef.Unlock()
	idc := identity.Config{MasterKey: testKey}
	if spec.webhook != "" {
		idc.CustomAuthURL = spec.webhook
	}
	authn, err := identity.New(idc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := spec.cfg
	cfg.Gateway, cfg.Auth, cfg.Sealer = g, authn, sealer
	cfg.Advertised = []string{mcp.V20260728, mcp.V20251125}
	cfg.Info = mcp.Implementation{Name: "mcpgw", Version: "test"}
	cfg.ScopedPrefix = true
	cfg.Resolve = func(seg string) (string, bool) {
		for _, s := range servers {
			if s.Name == seg {
				return s.Name, true
			}
		}
		return "", false
	}
	h := NewMCP(cfg)
	if spec.clock != nil {
		h.sessions.now = spec.clock
	}
	mux := http.NewServeMux()
	h.Register(mux)
	h.RegisterREST(mux)
	var handler http.Handler = mux
	if spec.admission != nil {
		handler = admit.Handler(mux, *spec.admission)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		h.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return &testFront{url: srv.URL, mcp: h}
}

// switchableWebhook answers custom_auth with the identity set last; "" refuses.
func switchableWebhook(t *testing.T) (url string, set func(identity string)) {
	var mu sync.Mutex
	current := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		id := current
		mu.Unlock()
		if id == "" {
			http.Error(w, "revoked", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, id)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func(id string) { mu.Lock(); current = id; mu.Unlock() }
}

// webhookFor answers custom_auth with one identity per key.
func webhookFor(t *testing.T, identities map[string]string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		id, ok := identities[in.APIKey]
		if !ok {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, id)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends one JSON-RPC message with the given headers.
func post(t *testing.T, url string, hdr map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// eventually polls cond until it holds or d passes.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
