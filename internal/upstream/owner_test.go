package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

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
