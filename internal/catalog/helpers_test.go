package catalog

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

const testSaltKey = "catalog-test-salt-key-0123456789abcdef"

// upSpec is one upstream of a test catalog.
type upSpec struct {
	name string
	fake *fakemcp.Server
	url  string // overrides fake.URL() (e.g. a closed server)
	// tweak adjusts the client configuration.
	tweak func(*upstream.Config)
}

func newTestSealer(t *testing.T, key string) *seal.Sealer {
	t.Helper()
	s, err := seal.New(key, SealPurpose)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t *testing.T, u upSpec) *upstream.Client {
	t.Helper()
	cfg := upstream.Config{Name: u.name, ProtocolVersion: "2026-07-28", RequestTimeout: 10 * time.Second, ListTimeout: 10 * time.Second}
	if u.fake != nil {
		cfg.URL = u.fake.URL()
		if u.fake.Legacy() {
			cfg.ProtocolVersion = "2025-11-25"
		}
	}
	if u.url != "" {
		cfg.URL = u.url
	}
	if u.tweak != nil {
		u.tweak(&cfg)
	}
	c, err := upstream.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// newTestCatalog builds a catalog over the given upstreams; cfg's Servers
// are filled in, a sealer is made when cfg has none (pass noSealer to keep
// it nil).
func newTestCatalog(t *testing.T, cfg Config, ups ...upSpec) *Catalog {
	t.Helper()
	if cfg.Workers == nil {
		// Fan-outs run on kept workers, as the gateway's do; a bound of 2
		// also sends calls past it to goroutines of their own. Registered
		// before the clients, it is closed after them (cleanups run last
		// first), as App.Close does.
		w := NewWorkers(2, nil)
		t.Cleanup(func() { _ = w.Close(context.Background()) })
		cfg.Workers = w
	}
	for _, u := range ups {
		cfg.Servers = append(cfg.Servers, &Server{Name: u.name, Client: newClient(t, u)})
	}
	if cfg.Sealer == nil {
		cfg.Sealer = newTestSealer(t, testSaltKey)
	}
	return New(cfg)
}

// listed is one decoded aggregate list page.
type listed struct {
	raw      json.RawMessage
	members  map[string]json.RawMessage
	items    []map[string]any
	next     string
	outcomes map[string]any
}

func decodeList(t *testing.T, method string, raw json.RawMessage) listed {
	t.Helper()
	l := listed{raw: raw}
	if err := json.Unmarshal(raw, &l.members); err != nil {
		t.Fatalf("list result is not an object: %v\n%s", err, raw)
	}
	arr, ok := l.members[listKey(method)]
	if !ok {
		t.Fatalf("list result has no %q: %s", listKey(method), raw)
	}
	if err := json.Unmarshal(arr, &l.items); err != nil {
		t.Fatalf("%s is not an array of objects: %v", listKey(method), err)
	}
	if nc, ok := l.members["nextCursor"]; ok {
		if err := json.Unmarshal(nc, &l.next); err != nil || l.next == "" {
			t.Fatalf("nextCursor is not a non-empty string: %s", nc)
		}
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(l.members["_meta"], &meta); err != nil {
		t.Fatalf("result _meta: %v\n%s", err, raw)
	}
	if err := json.Unmarshal(meta[mcp.MetaServerOutcomes], &l.outcomes); err != nil {
		t.Fatalf("result _meta[%q]: %v\n%s", mcp.MetaServerOutcomes, err, raw)
	}
	return l
}

// field lists one string member of every item.
func (l listed) field(key string) []string {
	out := make([]string, 0, len(l.items))
	for _, it := range l.items {
		s, _ := it[key].(string)
		out = append(out, s)
	}
	return out
}

func mustList(t *testing.T, c *Catalog, q Query, method, cursor string) listed {
	t.Helper()
	raw, fail := c.List(context.Background(), q, method, cursor)
	if fail != nil {
		t.Fatalf("%s: unexpected failure %+v (%v)", method, fail, answer(fail).Err)
	}
	return decodeList(t, method, raw)
}

// jsonEqual compares a decoded value with the JSON text want.
func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	b, _ := json.Marshal(got)
	var g any
	_ = json.Unmarshal(b, &g)
	return reflect.DeepEqual(g, w)
}

// answer is a catalog failure as a modern caller is answered it: the status,
// JSON-RPC error and challenge the failure stands for.
func answer(f *fault.Fault) fault.Answer { return fault.Encode(fault.Modern, "", f) }
