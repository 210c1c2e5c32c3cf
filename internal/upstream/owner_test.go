package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// Per-session upstream state (cached roots, the log level set with
// logging/setLevel) must not cross callers: each owner gets a session of
// its own, reused for its later calls, and callers without an owner keep
// sharing theirs.
func TestOwnerGetsItsOwnSession(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Offer: Offer{Roots: true}})
	roots := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"roots":[]}`), nil
	}
	as := func(owner string) Options { return Options{Interactions: &Interactions{Roots: roots, Owner: owner}} }
	ctx := context.Background()
	steps := []struct {
		method string
		opts   Options
	}{
		{"logging/setLevel", as("caller-a")}, // s1: a's level
		{"tools/call", as("caller-b")},       // s2
		{"tools/call", as("caller-a")},       // s1 again
		{"tools/call", Options{}},            // s3: the shared session
		{"logging/setLevel", as("caller-b")}, // s2 again
		{"tools/call", Options{}},            // s3 again
	}
	for _, st := range steps {
		params := json.RawMessage(`{"name":"x","arguments":{}}`)
		if st.method == "logging/setLevel" {
			params = json.RawMessage(`{"level":"debug"}`)
		}
		if _, err := c.Call(ctx, st.method, params, st.opts); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"initialize None", "logging/setLevel s1", "initialize None", "tools/call s2", "tools/call s1",
		"initialize None", "tools/call s3", "logging/setLevel s2", "tools/call s3"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v,\nwant %v", got, want)
	}
}

// Callers' own sessions are bounded among themselves: a stranger opening
// many downstream sessions evicts only other callers' idle sessions, never
// the shared one, and is refused (503) when all of them are in use.
func TestOwnedSessionsBounded(t *testing.T) {
	release := make(chan struct{})
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if name, _ := jsonrpc.StringMember(m.Params, "name"); name == "hold" {
			<-release
		}
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", MaxOwnedSessions: 2})
	ctx := context.Background()
	as := func(owner string) Options { return Options{Interactions: &Interactions{Owner: owner}} }
	call := func(tool string, opts Options) error {
		_, err := c.CallTool(ctx, tool, json.RawMessage(`{}`), opts)
		return err
	}
	for _, o := range []Options{{}, as("a"), as("b"), as("c")} { // c evicts a (least recently used)
		if err := call("x", o); err != nil {
			t.Fatal(err)
		}
	}
	if c.poolSize() != 3 {
		t.Fatalf("pool size = %d, want 3 (shared, b, c)", c.poolSize())
	}
	if err := call("x", Options{}); err != nil { // the shared session survived
		t.Fatal(err)
	}
	done := make(chan error, 2)
	for _, o := range []string{"b", "c"} {
		go func() { done <- call("hold", as(o)) }()
	}
	deadline := time.Now().Add(5 * time.Second)
	for held := 0; held < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		held = 0
		for _, s := range f.requests() {
			if strings.Contains(s.Body, `"hold"`) {
				held++
			}
		}
	}
	if err := call("x", as("d")); !errors.As(err, new(*PoolFullError)) {
		t.Fatalf("a new owner while every owned session is in use: err = %v, want PoolFullError", err)
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	deletes := 0
	for _, s := range f.requests() {
		if s.HTTPMethod == http.MethodDelete {
			deletes++
			if s.Session != "s2" {
				t.Fatalf("ended session %s, want s2 (owner a's)", s.Session)
			}
		}
	}
	if deletes != 1 {
		t.Fatalf("%d sessions ended, want 1", deletes)
	}
}
