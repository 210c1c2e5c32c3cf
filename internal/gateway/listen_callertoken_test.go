package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// vaultTokens is a CallerTokens whose one token the test replaces or deletes.
type vaultTokens struct {
	mu  sync.Mutex
	tok string
}

func (v *vaultTokens) set(tok string) { v.mu.Lock(); v.tok = tok; v.mu.Unlock() }

func (v *vaultTokens) Token(context.Context, *identity.Caller, string) (string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.tok == "" {
		return "", ErrCallerTokenAbsent
	}
	return v.tok, nil
}

func (v *vaultTokens) Refused(context.Context, *identity.Caller, string, string) (string, error) {
	return "", ErrCallerTokenAbsent
}

func (v *vaultTokens) AuthorizeURL(context.Context, *identity.Caller, string) string { return "" }

// listenAuthRecorder proxies to target over real HTTP and records the Authorization of every
// subscriptions/listen it passes on.
type listenAuthRecorder struct {
	mu   sync.Mutex
	auth []string
}

func (l *listenAuthRecorder) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.auth...)
}

func recordListenAuth(t *testing.T, target string) (*listenAuthRecorder, string) {
	t.Helper()
	u, _ := url.Parse(target)
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.URL.Path = u.Path }, FlushInterval: -1}
	rec := &listenAuthRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, err := jsonrpc.Decode(body); err == nil && m.Method == mcp.MethodSubscriptionsListen {
			rec.mu.Lock()
			rec.auth = append(rec.auth, r.Header.Get("Authorization"))
			rec.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL + "/mcp"
}

// A held listen on a server whose credential is the caller's own token is opened again with
// the caller's new token once the vault's changes (a refresh), and ends once the token is
// deleted.
func TestHeldListenFollowsTheCallersVaultToken(t *testing.T) {
	fake := listChangedFake(t, func() []string { return []string{"a"} })
	up := controlledUpstream(t, fake, false, false)
	rec, front := recordListenAuth(t, up.url)
	tokens := &vaultTokens{tok: "token-1"}
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second, CallerTokens: tokens, ListenTokenCheck: 50 * time.Millisecond},
		upSpec{name: "gh", fake: fake, url: front, server: Server{CallerToken: true}, auth: auth.PolicyConfig{AuthType: auth.AuthOAuth2}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.ListenFilter(ctx, Operation{Caller: alice, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen},
			Filter{ToolsListChanged: true}, Listener{Ack: func(json.RawMessage) bool { close(acked); return true }, Emit: func(string, json.RawMessage, time.Time) bool { return true }})
	}()
	select {
	case <-acked:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen was not acknowledged")
	}
	if got := rec.seen(); len(got) != 1 || got[0] != "Bearer token-1" {
		t.Fatalf("upstream listens opened with %q, want one with token-1", got)
	}
	tokens.set("token-2") // refreshed
	waitCount(t, &up.opened, 2, 5*time.Second, "upstream listens opened after the token changed")
	waitCount(t, &up.open, 1, 5*time.Second, "upstream listens open after the token changed")
	if got := rec.seen(); len(got) != 2 || got[1] != "Bearer token-2" {
		t.Fatalf("upstream listens opened with %q, want the second with token-2", got)
	}
	tokens.set("") // deleted
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen outlived the caller's deleted token")
	}
	waitCount(t, &up.open, 0, 5*time.Second, "upstream listens open after the token was deleted")
	if n := up.opened.Load(); n != 2 {
		t.Fatalf("upstream listens opened %d times, want 2", n)
	}
}
