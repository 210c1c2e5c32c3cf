package catalog

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// The x-mcp-header annotations of a server's tools are known from the
// caller's own recent listing, keyed as the list cache is (binding and
// credentials), and only for servers whose annotations bind callers.
func TestParamSpecsFollowTheCallersListing(t *testing.T) {
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"geo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}`),
		json.RawMessage(`{"name":"plain","inputSchema":{"type":"object"}}`),
	}
	f := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: tools}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f}, upSpec{name: "skip", fake: f})
	cat.servers["skip"].SkipParamHeaders = true
	cred := func(key string) func(string) string { return func(string) string { return key } }
	alice := Query{Servers: []string{"s", "skip"}, Prefixed: true, Binding: "alice", CredentialKey: cred("c1")}

	if got := cat.ParamSpecs(alice, "s", "geo"); got != nil {
		t.Fatalf("annotations known before any listing: %v", got)
	}
	mustList(t, cat, alice, mcp.MethodToolsList, "")
	want := []mcp.ParamSpec{{Header: "Mcp-Param-Region", Path: []string{"region"}, Type: "string"}}
	for _, tc := range []struct {
		name         string
		q            Query
		server, tool string
		want         []mcp.ParamSpec
	}{
		{"the caller's listing", alice, "s", "geo", want},
		{"a tool without annotations", alice, "s", "plain", nil},
		{"an unknown tool", alice, "s", "nope", nil},
		{"a server whose annotations do not bind", alice, "skip", "geo", nil},
		{"another caller", Query{Servers: alice.Servers, Prefixed: true, Binding: "bob", CredentialKey: cred("c1")}, "s", "geo", nil},
		{"other credentials", Query{Servers: alice.Servers, Prefixed: true, Binding: "alice", CredentialKey: cred("c2")}, "s", "geo", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cat.ParamSpecs(tc.q, tc.server, tc.tool)
			if len(got) != len(tc.want) || (len(got) == 1 && (got[0].Header != tc.want[0].Header || got[0].Type != tc.want[0].Type)) {
				t.Fatalf("specs = %+v, want %+v", got, tc.want)
			}
		})
	}
	// Knows lists for a caller without a recent listing, and so learns them.
	bob := Query{Servers: []string{"s"}, Prefixed: true, Binding: "bob"}
	if listed, known := cat.Knows(context.Background(), bob, "s", mcp.MethodToolsList, "geo"); !listed || !known {
		t.Fatalf("Knows = %v %v", listed, known)
	}
	if got := cat.ParamSpecs(bob, "s", "geo"); len(got) != 1 {
		t.Fatalf("after Knows: %+v", got)
	}
}
