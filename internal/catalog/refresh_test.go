package catalog

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// Read asks the upstream for all four lists in order, even when they are
// cached, and leaves them cached for the lists that follow.
func TestReadAsksTheUpstreamInOrder(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "public",
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x")}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
	q := Query{Servers: []string{"s"}, Prefixed: true, Binding: "a"}
	mustList(t, cat, q, mcp.MethodToolsList, "")
	for round := 1; round <= 2; round++ {
		if err := cat.Read(context.Background(), q, "s"); err != nil {
			t.Fatal(err)
		}
		for _, m := range catalogMethods {
			if got := f.Count(m); got != round+boolInt(m == mcp.MethodToolsList) {
				t.Fatalf("round %d: %s asked %d times", round, m, got)
			}
		}
	}
	mustList(t, cat, q, mcp.MethodToolsList, "")
	if got := f.Count(mcp.MethodToolsList); got != 3 {
		t.Fatalf("a list after Read asked the upstream again (%d)", got)
	}
	if err := cat.Read(context.Background(), q, "unknown"); err == nil {
		t.Fatal("Read of an unknown server succeeded")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Forget drops a server's lists cached for the named credentials, every
// binding's, and nothing else.
func TestForgetDropsOneCredentialsLists(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "private",
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("x")}})
	g := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000), CacheScope: "private",
		Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("y")}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f}, upSpec{name: "other", fake: g})
	query := func(binding, cred string) Query {
		return Query{Servers: []string{"s", "other"}, Prefixed: true, Binding: binding, CredentialKey: func(string) string { return cred }}
	}
	for _, q := range []Query{query("a", "c1"), query("b", "c1"), query("a", "c2")} {
		mustList(t, cat, q, mcp.MethodToolsList, "")
	}
	if f.Count(mcp.MethodToolsList) != 3 || g.Count(mcp.MethodToolsList) != 3 {
		t.Fatalf("filling: %d %d", f.Count(mcp.MethodToolsList), g.Count(mcp.MethodToolsList))
	}
	cat.Forget("s", "c1")
	for _, q := range []Query{query("a", "c1"), query("b", "c1"), query("a", "c2")} {
		mustList(t, cat, q, mcp.MethodToolsList, "")
	}
	if got := f.Count(mcp.MethodToolsList); got != 5 {
		t.Fatalf("s asked %d times after Forget, want 5 (both c1 bindings again, c2 cached)", got)
	}
	if got := g.Count(mcp.MethodToolsList); got != 3 {
		t.Fatalf("another server's lists were forgotten (%d)", got)
	}
}

// Forget is one counter per server and credentials, bounded: past
// maxCacheEntries counts the cache starts over, and no forgotten entry is
// ever served again.
func TestMemoryForgetIsBounded(t *testing.T) {
	c := NewMemoryListCache()
	ctx, now := context.Background(), time.Now()
	k := ListKey{Server: "s", Method: mcp.MethodToolsList, Binding: "a", Credentials: "c1"}
	put := func() {
		if err := c.Put(ctx, k, false, Pages{Items: fakemcp.Tools("x")}, now.Add(time.Minute), now, 0); err != nil {
			t.Fatal(err)
		}
	}
	put()
	if err := c.Forget(ctx, "s", "c2"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Get(ctx, k, now); !ok {
		t.Fatal("forgetting other credentials dropped c1's list")
	}
	_ = c.Forget(ctx, "s", "c1")
	if _, ok, _ := c.Get(ctx, k, now); ok {
		t.Fatal("a forgotten list was served")
	}
	put()
	for i := 0; i < maxCacheEntries+1; i++ {
		_ = c.Forget(ctx, "other", strconv.Itoa(i))
	}
	if n := len(c.forgets); n > maxCacheEntries {
		t.Fatalf("%d Forget counts held, bound %d", n, maxCacheEntries)
	}
	if _, ok, _ := c.Get(ctx, k, now); ok {
		t.Fatal("a list kept before the counts started over is still served")
	}
}
