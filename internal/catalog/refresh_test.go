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

// Forget is one update of the credentials' state; forgets of credentials
// without entries leave bounded traces and never drop anyone's entries.
func TestMemoryForgetIsBoundedAndNeverFlushesOthers(t *testing.T) {
	c := NewMemoryListCache()
	ctx, now := context.Background(), time.Now()
	k := ListKey{Server: "s", Method: mcp.MethodToolsList, Binding: "a", Credentials: "c1"}
	put := func(k ListKey) {
		t.Helper()
		st, err := c.Stamp(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Put(ctx, k, false, Pages{Items: fakemcp.Tools("x")}, now.Add(time.Minute), now, st); err != nil {
			t.Fatal(err)
		}
	}
	put(k)
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
	put(k)
	other := ListKey{Server: "other", Method: mcp.MethodToolsList, Binding: "b2"}
	put(other)
	inFlight := ListKey{Server: "s", Method: mcp.MethodToolsList, Binding: "a", Credentials: "c3"}
	before, _ := c.Stamp(ctx, inFlight) // a fetch with credentials that have no entries begins
	for i := 0; i <= maxCredStates; i++ {
		_ = c.Forget(ctx, "s", "caller-varied-"+strconv.Itoa(i))
	}
	if n := len(c.creds); n > maxCredStates {
		t.Fatalf("%d credentials' states held, bound %d", n, maxCredStates)
	}
	for _, k := range []ListKey{k, other} {
		if _, ok, _ := c.Get(ctx, k, now); !ok {
			t.Fatalf("%s's list, never forgotten since it was kept, was dropped by %d forgets of credentials without entries", k.Server, maxCredStates+1)
		}
	}
	_ = c.Put(ctx, inFlight, false, Pages{}, now.Add(time.Minute), now, before)
	if _, ok, _ := c.Get(ctx, inFlight, now); ok {
		t.Fatal("a fetch begun before its credentials' traces were dropped was stored")
	}
}

// Each credentials' state lives while it has entries or a forget newer
// than the floor: every path that drops an entry counts it out.
func TestMemoryCredentialStatesEndWithTheirEntries(t *testing.T) {
	c := NewMemoryListCache()
	ctx, now := context.Background(), time.Now()
	k := ListKey{Server: "s", Method: mcp.MethodToolsList, Binding: "a", Credentials: "c1"}
	put := func(k ListKey, private bool, ttl time.Duration) {
		t.Helper()
		st, _ := c.Stamp(ctx, k)
		_ = c.Put(ctx, k, private, Pages{}, now.Add(ttl), now, st)
	}
	put(k, false, time.Minute)
	put(k, true, time.Minute)
	put(k, false, time.Minute) // replaces: still two entries
	if cs := c.creds[forgetKey("s", "c1")]; cs == nil || cs.live != 2 {
		t.Fatalf("state after 2 entries = %+v", cs)
	}
	_ = c.Invalidate(ctx, "s", mcp.MethodToolsList)
	c.Get(ctx, k, now) // meets both, stale
	if len(c.creds) != 0 || len(c.entries) != 0 {
		t.Fatalf("after the entries were dropped: %d states, %d entries held", len(c.creds), len(c.entries))
	}
	put(k, false, time.Second)
	c.Get(ctx, k, now.Add(time.Second)) // expired
	if len(c.creds) != 0 {
		t.Fatalf("an expired entry's state is held (%d)", len(c.creds))
	}
}
