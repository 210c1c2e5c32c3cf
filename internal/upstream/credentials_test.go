package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

func TestOAuth2RefreshOnceOn401(t *testing.T) {
	var mints atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_id") != "gw" || r.PostForm.Get("scope") != "read write" {
			t.Errorf("token form = %v", r.PostForm)
		}
		tok := "stale"
		if mints.Add(1) > 1 {
			tok = "fresh"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	}))
	defer tokenSrv.Close()
	var mu sync.Mutex
	var seenAuth []string
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		mu.Lock()
		seenAuth = append(seenAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer fresh" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "expired", http.StatusUnauthorized)
			return
		}
		writeJSON(w, 200, toolsPage(m.ID, "a"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2026-07-28",
		Auth:   auth.PolicyConfig{AuthType: "oauth2"},
		OAuth2: &auth.ClientCredentialsConfig{TokenURL: tokenSrv.URL, ClientID: "gw", ClientSecret: "s3cret", Scopes: []string{"read", "write"}}})
	// Pinned modern: the first request is the discover of the session start.
	tools, err := c.ListTools(context.Background(), Options{})
	if err != nil || len(tools) != 1 {
		t.Fatalf("tools=%s err=%v", tools, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Bearer stale", "Bearer fresh"}; !slices.Equal(seenAuth[:2], want) {
		t.Fatalf("Authorization headers seen = %v, want %v first", seenAuth, want)
	}
	if mints.Load() != 2 {
		t.Fatalf("%d mints, want 2", mints.Load())
	}
}

func TestOAuth2PersistentRefusalIsNotRetriedForever(t *testing.T) {
	var mints, calls atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mints.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"never-good","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokenSrv.Close()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		calls.Add(1)
		http.Error(w, "no", http.StatusUnauthorized)
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25",
		Auth:   auth.PolicyConfig{AuthType: "oauth2"},
		OAuth2: &auth.ClientCredentialsConfig{TokenURL: tokenSrv.URL, ClientID: "gw", ClientSecret: "s3cret"}})
	_, err := c.ListTools(context.Background(), Options{})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 401 || Classify(err).Fault != FaultAuthRequired {
		t.Fatalf("err = %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d upstream requests, want the first and one retry", calls.Load())
	}
}

func TestCredentialSlotOnTheWire(t *testing.T) {
	var got http.Header
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		got = r.Header.Clone()
		writeJSON(w, 200, toolsPage(m.ID))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25",
		Auth: auth.PolicyConfig{AuthType: "bearer_token", AuthValue: "minted", HeaderName: "esb-oauth",
			StaticHeaders: map[string]string{" Authorization ": "Bearer static-upstream-mcp-token", "X-Pad": " v "}}})
	injected := http.Header{"ESB-OAuth": {"Bearer forged"}, "X-Trace": {"t1"}}
	if _, err := c.ListTools(context.Background(), Options{Header: injected}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Esb-Oauth": "Bearer minted", "Authorization": "Bearer static-upstream-mcp-token", "X-Trace": "t1", "X-Pad": "v", "X-Api-Key": ""}
	for k, v := range want {
		if got.Get(k) != v {
			t.Errorf("%s = %q, want %q (headers %v)", k, got.Get(k), v, got)
		}
	}
}

func TestRedirects(t *testing.T) {
	var other atomic.Int32
	otherSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer otherSrv.Close()
	var firstHits atomic.Int32
	var finalHeader atomic.Value
	f := newFake(t, nil)
	f.next = func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case r.URL.Path == "/away/mcp":
			firstHits.Add(1)
			http.Redirect(w, r, otherSrv.URL+"/mcp", http.StatusTemporaryRedirect)
		case r.URL.Path == "/mcp":
			http.Redirect(w, r, "/final/mcp", http.StatusTemporaryRedirect)
		case m.Method == "initialize":
			finalHeader.Store(r.Header.Get("X-Slot"))
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(202)
		case m.Method == "tools/call":
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)))
		default:
			writeJSON(w, 200, toolsPage(m.ID, "a"))
		}
	}
	cfg := Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Auth: auth.PolicyConfig{AuthType: "api_key", AuthValue: "k", HeaderName: "X-Slot"}}
	c := newClient(t, cfg)
	if _, err := c.ListTools(context.Background(), Options{}); err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	if _, err := c.CallTool(context.Background(), "a", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatalf("same-origin redirect call: %v", err)
	}
	if finalHeader.Load() != "k" {
		t.Fatalf("credential slot after a same-origin redirect = %v", finalHeader.Load())
	}
	cfg.URL = f.srv.URL + "/away/mcp"
	c2 := newClient(t, cfg)
	_, err := c2.ListTools(context.Background(), Options{})
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("cross-origin redirect: err = %v", err)
	}
	if firstHits.Load() != 1 || other.Load() != 0 {
		t.Fatalf("requests: %d to the first origin (want 1), %d to the other (want 0)", firstHits.Load(), other.Load())
	}
}

// sseUpstream is an in-process legacy HTTP+SSE server (2024-11-05): GET /sse
// opens the stream and announces /messages; each POST there is answered 202
// and its response goes out on the stream. getOK and postOK decide, from the
// Authorization header, whether a request is accepted (else 401).
type sseUpstream struct {
	srv           *httptest.Server
	getOK, postOK func(authz string) bool

	mu       sync.Mutex
	streams  map[string]chan []byte
	getAuth  []string
	postAuth []string
}

func newSSEUpstream(t *testing.T, getOK, postOK func(string) bool) *sseUpstream {
	u := &sseUpstream{getOK: getOK, postOK: postOK, streams: map[string]chan []byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sse", u.stream)
	mux.HandleFunc("POST /messages", u.message)
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	return u
}

func (u *sseUpstream) stream(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	u.mu.Lock()
	u.getAuth = append(u.getAuth, authz)
	sid := fmt.Sprint(len(u.getAuth))
	ch := make(chan []byte, 16)
	u.streams[sid] = ch
	u.mu.Unlock()
	if !u.getOK(authz) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: /messages?session=%s\n\n", sid)
	w.(http.Flusher).Flush()
	for {
		select {
		case b := <-ch:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (u *sseUpstream) message(w http.ResponseWriter, r *http.Request) {
	authz := r.Header.Get("Authorization")
	u.mu.Lock()
	u.postAuth = append(u.postAuth, authz)
	ch := u.streams[r.URL.Query().Get("session")]
	u.mu.Unlock()
	if !u.postOK(authz) {
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	m, err := jsonrpc.Decode(body)
	if err != nil || ch == nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	switch {
	case m.Kind() != jsonrpc.KindRequest:
	case m.Method == "initialize":
		ch <- jsonrpc.EncodeResult(m.ID, initResult("2024-11-05"))
	case m.Method == "tools/list":
		ch <- toolsPage(m.ID, "a")
	default:
		ch <- jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"})
	}
}

func (u *sseUpstream) auths() (get, post []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.getAuth), slices.Clone(u.postAuth)
}

// staleThenFresh is a token endpoint minting "stale" first and "fresh" after.
func staleThenFresh(t *testing.T, mints *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := "stale"
		if mints.Add(1) > 1 {
			tok = "fresh"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, tok)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// On the legacy HTTP+SSE transport, a minted token the upstream refuses is
// refreshed once and the request retried once, both when the stream is
// opened and when a message is posted.
func TestOAuth2RefreshOnceOn401OverSSE(t *testing.T) {
	fresh := func(a string) bool { return a == "Bearer fresh" }
	anyone := func(string) bool { return true }
	for _, tc := range []struct {
		name          string
		getOK, postOK func(string) bool
		wantGet       []string
		wantPost      []string // leading POSTs
	}{
		{"GET stream refused", fresh, anyone, []string{"Bearer stale", "Bearer fresh"}, []string{"Bearer fresh"}},
		{"POST refused", anyone, fresh, []string{"Bearer stale"}, []string{"Bearer stale", "Bearer fresh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mints atomic.Int32
			tokenSrv := staleThenFresh(t, &mints)
			up := newSSEUpstream(t, tc.getOK, tc.postOK)
			c := newClient(t, Config{Name: "up", Transport: TransportSSE, URL: up.srv.URL + "/sse",
				Auth:   auth.PolicyConfig{AuthType: "oauth2"},
				OAuth2: &auth.ClientCredentialsConfig{TokenURL: tokenSrv.URL, ClientID: "gw", ClientSecret: "s3cret"}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tools, err := c.ListTools(ctx, Options{})
			if err != nil || len(tools) != 1 {
				t.Fatalf("tools=%s err=%v", tools, err)
			}
			get, post := up.auths()
			if !slices.Equal(get, tc.wantGet) {
				t.Fatalf("GET Authorization = %v, want %v", get, tc.wantGet)
			}
			if len(post) < len(tc.wantPost) || !slices.Equal(post[:len(tc.wantPost)], tc.wantPost) {
				t.Fatalf("POST Authorization = %v, want %v first", post, tc.wantPost)
			}
			if mints.Load() != 2 {
				t.Fatalf("%d mints, want 2", mints.Load())
			}
		})
	}
}
