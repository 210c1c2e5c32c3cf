package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/seal"
)

// A cached list is served without allocating for the lookup.
func BenchmarkFetchCacheHit(b *testing.B) {
	s := &Server{Name: "server"}
	c := New(Config{Servers: []*Server{s}})
	q := Query{Servers: []string{"server"}, Binding: "v1;u=alice|scope", CredentialKey: func(string) string { return "cred-0123456789" }}
	now := time.Now()
	items := []json.RawMessage{json.RawMessage(`{"name":"x"}`)}
	putList(c.cache, "server", mcp.MethodToolsList, q.Binding, "cred-0123456789", true, items, now.Add(time.Hour), now, Stamp{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if got, err := c.fetch(ctx, q, s, mcp.MethodToolsList); err != nil || len(got) != 1 {
			b.Fatalf("fetch = %d items, %v", len(got), err)
		}
	}
}

// A later page of a walk is cut from the first page's snapshot.
func BenchmarkListPageFromSnapshot(b *testing.B) {
	sealer, err := seal.New(testSaltKey, SealPurpose)
	if err != nil {
		b.Fatal(err)
	}
	c := New(Config{Sealer: sealer})
	const binding = "v1;u=alice|"
	items := make([]json.RawMessage, 0, 2*PageSize)
	for i := range 2 * PageSize {
		items = append(items, json.RawMessage(fmt.Sprintf(`{"name":"s-t%d"}`, i)))
	}
	n := len(items)
	outcomes := map[string]Outcome{"s": {Status: "ok", ToolCount: &n}}
	snapID, err := c.snaps.Put(context.Background(), Snapshot{Binding: binding, Items: items, Outcomes: outcomes, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	next, err := c.sealNext(cursor{Method: mcp.MethodToolsList, Binding: binding, Offset: PageSize, Snapshot: snapID})
	if err != nil {
		b.Fatal(err)
	}
	q := Query{Servers: []string{"s"}, Binding: binding}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, fail := c.List(ctx, q, mcp.MethodToolsList, next); fail != nil {
			b.Fatal(fail)
		}
	}
}

// Invalidate on a full cache is one counter update, not a sweep.
func BenchmarkInvalidateFullCache(b *testing.B) {
	c := NewMemoryListCache()
	ctx, now := context.Background(), time.Now()
	for i := range maxCacheEntries - 1 {
		k := ListKey{Server: fmt.Sprintf("s%d", i%20), Method: mcp.MethodToolsList, Binding: "b", Credentials: fmt.Sprint(i)}
		_ = c.Put(ctx, k, false, Pages{}, now.Add(time.Hour), now, Stamp{})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Invalidate(ctx, "s0", mcp.MethodToolsList)
	}
}
