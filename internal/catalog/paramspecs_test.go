package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

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
		// Without a listing of their own, the annotations last listed to anyone.
		{"another caller", Query{Servers: alice.Servers, Prefixed: true, Binding: "bob", CredentialKey: cred("c1")}, "s", "geo", want},
		{"other credentials", Query{Servers: alice.Servers, Prefixed: true, Binding: "alice", CredentialKey: cred("c2")}, "s", "geo", want},
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

// A caller's own recent listing decides its tools' annotations; without one
// (its list could not be fetched), the annotations a tool was last listed
// with decide, so headers are still checked while tools/list fails. A
// listing that shows a tool without annotations clears what was learned.
func TestParamSpecsFallBackToTheLastListing(t *testing.T) {
	geo := func(header string) json.RawMessage {
		return json.RawMessage(`{"name":"geo","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"` + header + `"}}}}`)
	}
	plain := json.RawMessage(`{"name":"geo","inputSchema":{"type":"object"}}`)
	c := &Catalog{now: time.Now}
	c.seen.lists = map[ListKey]shown{}
	alice := Query{Binding: "alice"}
	bob := Query{Binding: "bob"}
	carol := Query{Binding: "carol"}
	now := time.Now()
	c.seen.record(alice, "s", mcp.MethodToolsList, []json.RawMessage{geo("Region")}, true, now)
	c.seen.record(bob, "s", mcp.MethodToolsList, []json.RawMessage{geo("Zone")}, true, now)
	header := func(q Query) string {
		sp := c.ParamSpecs(q, "s", "geo")
		if len(sp) != 1 {
			return ""
		}
		return sp[0].Header
	}
	if got := header(alice); got != "Mcp-Param-Region" {
		t.Fatalf("alice: %q, want her own listing's", got)
	}
	if got := header(carol); got != "Mcp-Param-Zone" {
		t.Fatalf("carol without a listing: %q, want the last listed", got)
	}
	c.seen.record(bob, "s", mcp.MethodToolsList, []json.RawMessage{plain}, true, now)
	if got := header(carol); got != "" {
		t.Fatalf("after a listing without annotations: %q, want none", got)
	}
	if got := header(alice); got != "Mcp-Param-Region" {
		t.Fatalf("alice after bob's listing: %q, want her own listing's", got)
	}
	// Listings alternating between two lists each learn theirs again.
	for i := range 2 {
		c.seen.record(alice, "s", mcp.MethodToolsList, []json.RawMessage{geo("Region")}, true, now)
		if got := header(carol); got != "Mcp-Param-Region" {
			t.Fatalf("round %d, carol after alice listed again: %q, want the last listed", i, got)
		}
		c.seen.record(bob, "s", mcp.MethodToolsList, []json.RawMessage{plain}, true, now)
		if got := header(carol); got != "" {
			t.Fatalf("round %d, carol after bob listed again: %q, want none", i, got)
		}
	}
	// Past seenFor, alice's listing no longer decides: the last listed does.
	c.now = func() time.Time { return now.Add(seenFor + time.Second) }
	if got := header(alice); got != "" {
		t.Fatalf("alice's stale listing: %q, want the last listed (none)", got)
	}
	// A server whose annotations do not bind learns nothing.
	c.seen.record(alice, "skip", mcp.MethodToolsList, []json.RawMessage{geo("Region")}, false, now)
	if sp := c.ParamSpecs(carol, "skip", "geo"); sp != nil {
		t.Fatalf("skip server: %+v", sp)
	}
}

// A tool listed again byte for byte keeps its annotations (they are not
// parsed again), one whose annotation became invalid has none, and one
// listed as before again has its old ones back.
func TestParamSpecsRelisted(t *testing.T) {
	geo := func(header, typ string) json.RawMessage {
		return json.RawMessage(`{"name":"geo","inputSchema":{"type":"object","properties":{"region":{"type":"` + typ + `","x-mcp-header":"` + header + `"}}}}`)
	}
	c := &Catalog{now: time.Now}
	c.seen.lists = map[ListKey]shown{}
	alice := Query{Binding: "alice"}
	now := time.Now()
	for i, tc := range []struct {
		item json.RawMessage
		want string
	}{
		{geo("Region", "string"), "Mcp-Param-Region"},
		{geo("Region", "string"), "Mcp-Param-Region"},
		{geo("Region", "number"), ""}, // invalid: a number cannot carry one
		{geo("Region", "string"), "Mcp-Param-Region"},
		{geo("Zone", "string"), "Mcp-Param-Zone"},
	} {
		c.seen.record(alice, "s", mcp.MethodToolsList, []json.RawMessage{tc.item}, true, now)
		got := ""
		if sp := c.ParamSpecs(alice, "s", "geo"); len(sp) == 1 {
			got = sp[0].Header
		}
		if got != tc.want {
			t.Fatalf("listing %d: %q, want %q", i, got, tc.want)
		}
	}
}

// A caller's listing decides which names it was shown, whether the names
// are those of its last listing or not.
func TestListedFollowsEachListing(t *testing.T) {
	c := &Catalog{now: time.Now}
	c.seen.lists = map[ListKey]shown{}
	alice := Query{Binding: "alice"}
	item := json.RawMessage(`{"name":"x"}`)
	for i, names := range [][]string{{"a", "b"}, {"a", "b"}, {"a", "c"}, {"a", "a"}, {"", "b"}} {
		items := make([]json.RawMessage, len(names))
		for j := range items {
			items[j] = item
		}
		c.seen.recordNamed(alice, "s", mcp.MethodToolsList, items, slices.Clone(names), false, time.Now())
		for _, n := range []string{"a", "b", "c"} {
			listed, known := c.Listed(alice, "s", mcp.MethodToolsList, n)
			if want := slices.Contains(names, n); listed != want || !known {
				t.Fatalf("listing %d %v: Listed(%q) = %v %v, want %v", i, names, n, listed, known, want)
			}
		}
	}
}
