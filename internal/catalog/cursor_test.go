package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/seal"
)

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%04d", prefix, i)
	}
	return out
}

// walk pages through an aggregate list, returning every page.
func walk(t *testing.T, c *Catalog, q Query, method string) []listed {
	t.Helper()
	var pages []listed
	cursor := ""
	for {
		l := mustList(t, c, q, method, cursor)
		pages = append(pages, l)
		if l.next == "" {
			return pages
		}
		if len(pages) > 20 {
			t.Fatal("pagination does not end")
		}
		cursor = l.next
	}
}

func TestListPagination(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int // tools per upstream
		pages []int // items per page
	}{
		{"empty", []int{0}, []int{0}},
		{"under a page", []int{499}, []int{499}},
		{"exactly a page", []int{PageSize}, []int{PageSize}},
		{"a page and one", []int{PageSize + 1}, []int{PageSize, 1}},
		{"exactly two pages", []int{300, 700}, []int{PageSize, PageSize}},
		{"three upstreams, three pages", []int{400, 400, 400}, []int{PageSize, PageSize, 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ups []upSpec
			var servers, want []string
			for i, n := range tc.sizes {
				name := fmt.Sprintf("s%d", i)
				names := numbered("t", n)
				ups = append(ups, upSpec{name: name, fake: fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools(names...)}})})
				servers = append(servers, name)
				for _, n := range names {
					want = append(want, name+"-"+n)
				}
			}
			cat := newTestCatalog(t, Config{}, ups...)
			pages := walk(t, cat, Query{Servers: servers, Prefixed: true, Binding: "v1;u=alice|"}, mcp.MethodToolsList)
			if len(pages) != len(tc.pages) {
				t.Fatalf("%d pages, want %d", len(pages), len(tc.pages))
			}
			seen := map[string]int{}
			var got []string
			for i, p := range pages {
				if len(p.items) != tc.pages[i] {
					t.Fatalf("page %d holds %d items, want %d", i, len(p.items), tc.pages[i])
				}
				if len(p.outcomes) != len(servers) {
					t.Fatalf("page %d outcomes: %v", i, p.outcomes)
				}
				if _, ok := p.members["nextCursor"]; ok != (i < len(pages)-1) {
					t.Fatalf("page %d of %d: nextCursor present = %v", i, len(pages), ok)
				}
				for _, n := range p.field("name") {
					seen[n]++
					got = append(got, n)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d items across pages, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] || seen[want[i]] != 1 {
					t.Fatalf("item %d = %q (seen %d times), want %q once", i, got[i], seen[want[i]], want[i])
				}
			}
		})
	}
}

func TestListCursorRefused(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList:   fakemcp.Tools(numbered("t", PageSize+10)...),
		mcp.MethodPromptsList: fakemcp.Prompts(numbered("p", PageSize+10)...),
	}})
	sealer, err := seal.New(testSaltKey, SealPurpose, "mcp-session")
	if err != nil {
		t.Fatal(err)
	}
	cat := newTestCatalog(t, Config{Sealer: sealer}, upSpec{name: "s", fake: f})
	other := newTestCatalog(t, Config{Sealer: newTestSealer(t, "another-salt-key-fedcba9876543210")}, upSpec{name: "s", fake: f})
	later := newTestCatalog(t, Config{Sealer: sealer.WithClock(func() time.Time { return time.Now().Add(cursorTTL + time.Minute) })}, upSpec{name: "s", fake: f})
	unsealed := New(Config{Servers: cat.serverList()})

	const alice, bob = "v1;u=alice|", "v1;u=bob|"
	qa := Query{Servers: []string{"s"}, Prefixed: true, Binding: alice}
	qb := qa
	qb.Binding = bob
	first := mustList(t, cat, qa, mcp.MethodToolsList, "")
	if first.next == "" {
		t.Fatal("no cursor on a long list")
	}
	foreign := mustList(t, other, qa, mcp.MethodToolsList, "").next
	wrongPurpose, _ := sealer.Seal("mcp-session", []byte(`{"m":"tools/list","b":"v1;u=alice|","o":500}`), time.Minute)
	negative, _ := cat.sealNext(cursor{Method: mcp.MethodToolsList, Binding: alice, Offset: -1})
	tampered := []byte(first.next)
	tampered[len(tampered)/2] ^= 1
	if string(tampered) == first.next {
		t.Fatal("could not tamper")
	}

	for _, tc := range []struct {
		name   string
		cat    *Catalog
		q      Query
		method string
		cursor string
	}{
		{"another binding", cat, qb, mcp.MethodToolsList, first.next},
		{"another method", cat, qa, mcp.MethodPromptsList, first.next},
		{"tampered", cat, qa, mcp.MethodToolsList, string(tampered)},
		{"truncated", cat, qa, mcp.MethodToolsList, first.next[:len(first.next)-4]},
		{"from another salt key", cat, qa, mcp.MethodToolsList, foreign},
		{"replayed on another salt key", other, qa, mcp.MethodToolsList, first.next},
		{"expired", later, qa, mcp.MethodToolsList, first.next},
		{"sealed for another purpose", cat, qa, mcp.MethodToolsList, wrongPurpose},
		{"negative offset", cat, qa, mcp.MethodToolsList, negative},
		{"garbage", cat, qa, mcp.MethodToolsList, "not-a-cursor"},
		{"no sealer", unsealed, qa, mcp.MethodToolsList, first.next},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.Count(tc.method)
			raw, fail := tc.cat.List(context.Background(), tc.q, tc.method, tc.cursor)
			if fail == nil {
				t.Fatalf("cursor accepted: %.200s", raw)
			}
			if answer(fail).Status != http.StatusBadRequest || answer(fail).Err == nil || answer(fail).Err.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("failure = %+v (%v), want 400 / -32602", fail, answer(fail).Err)
			}
			if answer(fail).Err.Message != "invalid or expired cursor" {
				t.Fatalf("message = %q", answer(fail).Err.Message)
			}
			if n := f.Count(tc.method); n != before {
				t.Fatalf("an invalid cursor contacted the upstream (%s %d → %d)", tc.method, before, n)
			}
		})
	}

	t.Run("valid for its own binding and method", func(t *testing.T) {
		l := mustList(t, cat, qa, mcp.MethodToolsList, first.next)
		if len(l.items) != 10 || l.next != "" {
			t.Fatalf("second page: %d items, next %q", len(l.items), l.next)
		}
		// Replayable by the same caller (cursors are not single-use).
		if l2 := mustList(t, cat, qa, mcp.MethodToolsList, first.next); len(l2.items) != 10 {
			t.Fatalf("replayed second page: %d items", len(l2.items))
		}
	})
	t.Run("valid on another catalog sharing the salt key", func(t *testing.T) {
		twin := newTestCatalog(t, Config{Sealer: newTestSealer(t, testSaltKey)}, upSpec{name: "s", fake: f})
		if l := mustList(t, twin, qa, mcp.MethodToolsList, first.next); len(l.items) != 10 {
			t.Fatalf("second page on a replica: %d items", len(l.items))
		}
	})
	t.Run("past the end", func(t *testing.T) {
		far, err := cat.sealNext(cursor{Method: mcp.MethodToolsList, Binding: alice, Offset: 10 * PageSize})
		if err != nil {
			t.Fatal(err)
		}
		l := mustList(t, cat, qa, mcp.MethodToolsList, far)
		if len(l.items) != 0 || l.next != "" {
			t.Fatalf("page past the end: %d items, next %q", len(l.items), l.next)
		}
	})
	t.Run("no sealer cannot paginate", func(t *testing.T) {
		raw, fail := unsealed.List(context.Background(), qa, mcp.MethodToolsList, "")
		if fail == nil || answer(fail).Status != http.StatusInternalServerError {
			t.Fatalf("want a 500 failure, got %+v %.100s", fail, raw)
		}
	})
}

// serverList returns the catalog's servers, for a twin catalog.
func (c *Catalog) serverList() []*Server {
	out := make([]*Server, 0, len(c.servers))
	for _, s := range c.servers {
		out = append(out, s)
	}
	return out
}

// Later pages of a walk come from the aggregate its first page was cut from:
// no new fan-out, and an upstream that changes mid-walk does not shift them.
// On another replica (no snapshot) the cursor still works, by a fresh fan-out.
func TestLaterPagesComeFromTheSnapshot(t *testing.T) {
	var ups []upSpec
	var servers []string
	var fakes []*fakemcp.Server
	for i := range 3 {
		name := fmt.Sprintf("s%d", i)
		f := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools(numbered("t", 400)...)}})
		ups = append(ups, upSpec{name: name, fake: f})
		servers = append(servers, name)
		fakes = append(fakes, f)
	}
	cat := newTestCatalog(t, Config{}, ups...)
	q := Query{Servers: servers, Prefixed: true, Binding: "v1;u=alice|"}
	lists := func() int {
		n := 0
		for _, f := range fakes {
			n += f.Count(mcp.MethodToolsList)
		}
		return n
	}
	pages := walk(t, cat, q, mcp.MethodToolsList)
	if len(pages) != 3 || lists() != 3 {
		t.Fatalf("%d pages with %d upstream tools/list calls, want 3 pages with one call per upstream", len(pages), lists())
	}
	// Another replica with the same salt has no snapshot: it fans out again.
	other := newTestCatalog(t, Config{}, ups...)
	first := mustList(t, cat, q, mcp.MethodToolsList, "")
	before := lists()
	second := mustList(t, other, q, mcp.MethodToolsList, first.next)
	if len(second.items) != PageSize || lists() != before+3 {
		t.Fatalf("page on another replica: %d items, %d upstream calls", len(second.items), lists()-before)
	}
	// Another caller cannot reach this caller's snapshot.
	if _, fail := cat.List(context.Background(), Query{Servers: servers, Prefixed: true, Binding: "v1;u=bob|"}, mcp.MethodToolsList, first.next); fail == nil {
		t.Fatal("another caller used this caller's cursor")
	}
}
