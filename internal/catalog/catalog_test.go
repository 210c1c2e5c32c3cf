package catalog

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// twoServers is alpha (modern) and beta (legacy) with one of everything.
func twoServers(t *testing.T) (*fakemcp.Server, *fakemcp.Server, []upSpec) {
	alpha := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList:              fakemcp.Tools("search", "web-fetch"),
		mcp.MethodPromptsList:            fakemcp.Prompts("greet"),
		mcp.MethodResourcesList:          fakemcp.Resources("file:///a.txt"),
		mcp.MethodResourcesTemplatesList: fakemcp.Templates("file:///docs/{name}"),
	}})
	beta := fakemcp.New(t, fakemcp.Opts{Legacy: true, Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList:              fakemcp.Tools("search"),
		mcp.MethodPromptsList:            fakemcp.Prompts("summarise", "greet"),
		mcp.MethodResourcesList:          fakemcp.Resources("db://rows/1"),
		mcp.MethodResourcesTemplatesList: fakemcp.Templates("db://rows/{id}"),
	}})
	return alpha, beta, []upSpec{{name: "alpha", fake: alpha}, {name: "beta", fake: beta}}
}

func TestListPresentsItems(t *testing.T) {
	_, _, ups := twoServers(t)
	cat := newTestCatalog(t, Config{}, ups...)
	custom := newTestCatalog(t, Config{Separator: "__"}, ups...)
	for _, tc := range []struct {
		name     string
		cat      *Catalog
		method   string
		prefixed bool
		servers  []string
		field    string
		want     []string
		names    []string // the items' name members, when field is not name
	}{
		{"tools prefixed", cat, mcp.MethodToolsList, true, []string{"alpha", "beta"}, "name",
			[]string{"alpha-search", "alpha-web-fetch", "beta-search"}, nil},
		{"prompts prefixed", cat, mcp.MethodPromptsList, true, []string{"alpha", "beta"}, "name",
			[]string{"alpha-greet", "beta-summarise", "beta-greet"}, nil},
		{"server order follows the query", cat, mcp.MethodToolsList, true, []string{"beta", "alpha"}, "name",
			[]string{"beta-search", "alpha-search", "alpha-web-fetch"}, nil},
		{"custom separator", custom, mcp.MethodToolsList, true, []string{"alpha", "beta"}, "name",
			[]string{"alpha__search", "alpha__web-fetch", "beta__search"}, nil},
		{"resource URIs and names unprefixed", cat, mcp.MethodResourcesList, true, []string{"alpha", "beta"}, "uri",
			[]string{"file:///a.txt", "db://rows/1"}, []string{"res0", "res0"}},
		{"templates unprefixed", cat, mcp.MethodResourcesTemplatesList, true, []string{"alpha", "beta"}, "uriTemplate",
			[]string{"file:///docs/{name}", "db://rows/{id}"}, []string{"tpl0", "tpl0"}},
		{"tools unprefixed", cat, mcp.MethodToolsList, false, []string{"alpha"}, "name",
			[]string{"search", "web-fetch"}, nil},
		{"prompts unprefixed", cat, mcp.MethodPromptsList, false, []string{"beta"}, "name",
			[]string{"summarise", "greet"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustList(t, tc.cat, Query{Servers: tc.servers, Prefixed: tc.prefixed, Binding: "b"}, tc.method, "")
			if got := l.field(tc.field); !slices.Equal(got, tc.want) {
				t.Fatalf("%s = %q, want %q", tc.field, got, tc.want)
			}
			if tc.names != nil {
				if got := l.field("name"); !slices.Equal(got, tc.names) {
					t.Fatalf("names = %q, want %q", got, tc.names)
				}
			}
			// Everything but the name is the upstream's own: the fake
			// describes each item as "tool <bare name>" or "prompt <bare name>".
			for _, it := range l.items {
				d, ok := it["description"].(string)
				if !ok {
					continue
				}
				_, bare, _ := strings.Cut(d, " ")
				if name := it["name"].(string); !strings.HasSuffix(name, bare) {
					t.Fatalf("item %q came with the description %q", name, d)
				}
			}
			if l.next != "" {
				t.Fatalf("unexpected nextCursor on a short list")
			}
			if string(l.members["ttlMs"]) != "0" || string(l.members["cacheScope"]) != `"private"` {
				t.Fatalf("aggregate caching hints: ttlMs=%s cacheScope=%s", l.members["ttlMs"], l.members["cacheScope"])
			}
		})
	}
}

func TestListAllowTool(t *testing.T) {
	alpha, beta, ups := twoServers(t)
	cat := newTestCatalog(t, Config{}, ups...)
	var asked []string
	q := Query{
		Servers: []string{"alpha", "beta"}, Prefixed: true, Binding: "b",
		AllowTool: func(server, tool string) bool {
			asked = append(asked, server+"/"+tool) // called from List's goroutine
			return !(server == "alpha" && tool == "search")
		},
	}
	l := mustList(t, cat, q, mcp.MethodToolsList, "")
	if got, want := l.field("name"), []string{"alpha-web-fetch", "beta-search"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	// AllowTool is asked about bare upstream names.
	if want := []string{"alpha/search", "alpha/web-fetch", "beta/search"}; !slices.Equal(asked, want) {
		t.Fatalf("AllowTool asked %q, want %q", asked, want)
	}
	if !jsonEqual(t, l.outcomes, `{"alpha":{"status":"ok","tool_count":1},"beta":{"status":"ok","tool_count":1}}`) {
		t.Fatalf("outcomes = %v", l.outcomes)
	}
	// It filters tools only.
	asked = nil
	p := mustList(t, cat, q, mcp.MethodPromptsList, "")
	if len(p.items) != 3 || len(asked) != 0 {
		t.Fatalf("prompts filtered by AllowTool: %q (asked %q)", p.field("name"), asked)
	}
	// A refuse-all filter still lists (an empty list), contacting upstreams.
	q.AllowTool = func(string, string) bool { return false }
	l = mustList(t, cat, q, mcp.MethodToolsList, "")
	if len(l.items) != 0 {
		t.Fatalf("tools = %q, want none", l.field("name"))
	}
	if alpha.Count(mcp.MethodToolsList) != 2 || beta.Count(mcp.MethodToolsList) != 2 {
		t.Fatalf("tools/list counts alpha=%d beta=%d", alpha.Count(mcp.MethodToolsList), beta.Count(mcp.MethodToolsList))
	}
}

func TestListOutcomesIsolateFailures(t *testing.T) {
	const secret = "SECRET-UPSTREAM-TEXT"
	ok := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList:   fakemcp.Tools("a", "b"),
		mcp.MethodPromptsList: fakemcp.Prompts("p"),
	}})
	status := func(code int, challenge string) *fakemcp.Server {
		return fakemcp.New(t, fakemcp.Opts{Status: code, Challenge: challenge, Body: secret})
	}
	rpcFail := fakemcp.New(t, fakemcp.Opts{Handlers: map[string]func(json.RawMessage) (json.RawMessage, *jsonrpc.Error){
		mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s: db password is hunter2", secret)
		},
		mcp.MethodPromptsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", secret)
		},
	}})
	slow := fakemcp.New(t, fakemcp.Opts{Delay: map[string]time.Duration{mcp.MethodToolsList: 5 * time.Second, mcp.MethodPromptsList: 5 * time.Second}})
	gone := fakemcp.New(t, fakemcp.Opts{})
	goneURL := gone.URL()
	gone.Close()

	var logs fakemcp.LogBuffer
	cat := newTestCatalog(t, Config{Logger: logs.Logger()},
		upSpec{name: "ok", fake: ok},
		upSpec{name: "e500", fake: status(500, "")},
		upSpec{name: "e503", fake: status(503, "")},
		upSpec{name: "e429", fake: status(429, "")},
		upSpec{name: "e403", fake: status(403, `Bearer error="insufficient_scope"`)},
		upSpec{name: "e401", fake: status(401, `Bearer realm="x"`)},
		upSpec{name: "rpc", fake: rpcFail},
		upSpec{name: "slow", fake: slow, tweak: func(c *upstream.Config) { c.ListTimeout = 150 * time.Millisecond }},
		upSpec{name: "gone", url: goneURL},
	)
	servers := []string{"ok", "e500", "e503", "e429", "e403", "e401", "rpc", "slow", "gone"}
	failures := `"e500":{"status":"upstream_error"},
		"e503":{"status":"upstream_error","http_status":503},
		"e429":{"status":"upstream_error","http_status":429},
		"e403":{"status":"forbidden","http_status":403},
		"e401":{"status":"auth_required","http_status":401},
		"rpc":{"status":"upstream_error"}`
	for _, tc := range []struct {
		method, want string
		names        []string
	}{
		{mcp.MethodToolsList, `{"ok":{"status":"ok","tool_count":2},` + failures + `,"slow":{"status":"timeout"},"gone":{"status":"unreachable"}}`, []string{"ok-a", "ok-b"}},
		// The timeout and the unreachable server opened their breakers: the
		// next aggregate skips them at once; answering servers are asked again.
		{mcp.MethodPromptsList, `{"ok":{"status":"ok","count":1},` + failures + `,"slow":{"status":"skipped"},"gone":{"status":"skipped"}}`, []string{"ok-p"}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			l := mustList(t, cat, Query{Servers: servers, Prefixed: true, Binding: "b"}, tc.method, "")
			if got := l.field("name"); !slices.Equal(got, tc.names) {
				t.Fatalf("names = %q, want %q", got, tc.names)
			}
			if !jsonEqual(t, l.outcomes, tc.want) {
				b, _ := json.Marshal(l.outcomes)
				t.Fatalf("outcomes = %s\nwant %s", b, tc.want)
			}
			if strings.Contains(string(l.raw), secret) || strings.Contains(string(l.raw), "hunter2") {
				t.Fatalf("upstream text reached the caller: %s", l.raw)
			}
		})
	}
	if text := logs.String(); strings.Contains(text, secret) || strings.Contains(text, "hunter2") {
		t.Fatalf("upstream text reached the log: %s", text)
	}
}

func TestListEveryServerUnauthorized(t *testing.T) {
	a := fakemcp.New(t, fakemcp.Opts{Status: 401, Challenge: `Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource"`, Body: "SECRET"})
	b := fakemcp.New(t, fakemcp.Opts{Legacy: true, Status: 401, Challenge: `Bearer realm="b"`, Body: "SECRET"})
	f := fakemcp.New(t, fakemcp.Opts{Status: 403, Challenge: `Bearer error="insufficient_scope"`})
	ok := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "a", fake: a}, upSpec{name: "b", fake: b}, upSpec{name: "f", fake: f}, upSpec{name: "ok", fake: ok})

	for _, tc := range []struct {
		name      string
		servers   []string
		status    int
		challenge string
	}{
		{"one server", []string{"a"}, 401, `Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource"`},
		{"two servers: the first's challenge", []string{"b", "a"}, 401, `Bearer realm="b"`},
		{"401 and 403: the first's", []string{"f", "a"}, 403, `Bearer error="insufficient_scope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, fail := cat.List(context.Background(), Query{Servers: tc.servers, Prefixed: true, Binding: "x"}, mcp.MethodToolsList, "")
			if fail == nil {
				t.Fatalf("want a failure, got %s", raw)
			}
			if answer(fail).Status != tc.status || fail.Challenge != tc.challenge || answer(fail).Err == nil {
				t.Fatalf("failure = %+v, want status %d challenge %q", fail, tc.status, tc.challenge)
			}
			if strings.Contains(answer(fail).Err.Message, "SECRET") {
				t.Fatalf("upstream body in the error: %q", answer(fail).Err.Message)
			}
		})
	}
	t.Run("one server authorised", func(t *testing.T) {
		l := mustList(t, cat, Query{Servers: []string{"a", "ok"}, Prefixed: true, Binding: "x"}, mcp.MethodToolsList, "")
		if !jsonEqual(t, l.outcomes, `{"a":{"status":"auth_required","http_status":401},"ok":{"status":"ok","tool_count":1}}`) {
			t.Fatalf("outcomes = %v", l.outcomes)
		}
	})
}

func TestListNoServers(t *testing.T) {
	cat := New(Config{})
	for _, method := range []string{mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList} {
		l := mustList(t, cat, Query{Binding: "b"}, method, "")
		if len(l.items) != 0 || len(l.outcomes) != 0 || l.next != "" {
			t.Fatalf("%s over no servers: %s", method, l.raw)
		}
	}
}

func TestListFanOutIsConcurrent(t *testing.T) {
	const delay = 300 * time.Millisecond
	var ups []upSpec
	for _, name := range []string{"a", "b", "c"} {
		f := fakemcp.New(t, fakemcp.Opts{
			Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")},
			Delay: map[string]time.Duration{mcp.MethodToolsList: delay},
		})
		ups = append(ups, upSpec{name: name, fake: f})
	}
	cat := newTestCatalog(t, Config{}, ups...)
	start := time.Now()
	l := mustList(t, cat, Query{Servers: []string{"a", "b", "c"}, Prefixed: true, Binding: "b"}, mcp.MethodToolsList, "")
	elapsed := time.Since(start)
	if len(l.items) != 3 {
		t.Fatalf("tools = %q", l.field("name"))
	}
	// One after another would take at least 3×delay.
	if elapsed < delay || elapsed >= 750*time.Millisecond {
		t.Fatalf("aggregate of three %v upstreams took %v: not concurrent", delay, elapsed)
	}
}

func TestResourceOwner(t *testing.T) {
	alpha := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodResourcesList:          fakemcp.Resources("file:///shared", "file:///a"),
		mcp.MethodResourcesTemplatesList: fakemcp.Templates("file:///docs/{name}", "mem://{key}"),
	}})
	beta := fakemcp.New(t, fakemcp.Opts{Legacy: true, Lists: map[string][]json.RawMessage{
		mcp.MethodResourcesList:          fakemcp.Resources("file:///shared", "file:///b", "mem://listed"),
		mcp.MethodResourcesTemplatesList: fakemcp.Templates("db://rows/{id}"),
	}})
	broken := fakemcp.New(t, fakemcp.Opts{Status: 500})
	var logs fakemcp.LogBuffer
	cat := newTestCatalog(t, Config{Logger: logs.Logger()}, upSpec{name: "alpha", fake: alpha}, upSpec{name: "beta", fake: beta}, upSpec{name: "broken", fake: broken})

	ab := Query{Servers: []string{"alpha", "beta"}, Binding: "b", Prefixed: true}
	l := mustList(t, cat, ab, mcp.MethodResourcesList, "")
	if len(l.items) != 4 {
		t.Fatalf("resources = %q, want the shared URI once", l.field("uri"))
	}

	for _, tc := range []struct {
		name    string
		servers []string
		uri     string
		want    string // "" = not found
	}{
		{"duplicate: the first listed wins", []string{"alpha", "beta"}, "file:///shared", "alpha"},
		{"duplicate: order is the caller's", []string{"beta", "alpha"}, "file:///shared", "beta"},
		{"listed by the second", []string{"alpha", "beta"}, "file:///b", "beta"},
		{"a listing beats an earlier template", []string{"alpha", "beta"}, "mem://listed", "beta"},
		{"template on the second", []string{"alpha", "beta"}, "db://rows/42", "beta"},
		{"template on the first", []string{"alpha", "beta"}, "file:///docs/readme", "alpha"},
		{"template segment does not cross a slash", []string{"alpha", "beta"}, "db://rows/42/x", ""},
		{"unknown", []string{"alpha", "beta"}, "file:///nope", ""},
		{"not visible to this caller", []string{"alpha"}, "file:///b", ""},
		{"a failing server does not hide the others", []string{"broken", "alpha", "beta"}, "db://rows/1", "beta"},
		{"no servers", nil, "file:///a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, fail := cat.ResourceOwner(context.Background(), Query{Servers: tc.servers, Binding: "b", Prefixed: true}, tc.uri)
			if got != tc.want || fail != nil {
				t.Fatalf("ResourceOwner(%q) = %q, %v; want %q", tc.uri, got, fail, tc.want)
			}
		})
	}
}

func TestTemplateMatches(t *testing.T) {
	for _, tc := range []struct {
		tmpl, uri string
		want      bool
	}{
		{"file:///readme", "file:///readme", true},
		{"file:///readme", "file:///readme2", false},
		{"file:///{path}", "file:///a.txt", true},
		{"file:///{path}", "file:///dir/a.txt", false},
		{"file:///{path}", "file:///", false},
		{"file:///{+path}", "file:///dir/a.txt", true},
		{"file:///{+path}", "file:///", true},
		{"db://{table}/{id}", "db://users/7", true},
		{"db://{table}/{id}", "db://users/", false},
		{"db://{table}/{id}", "db://users", false},
		{"db://rows/{id}", "db://rows/{id}", true}, // a completion ref names the template itself
		{"a.b/{x}", "aXb/1", false},                // literals are literal
		{"a(b)*/{x}", "a(b)*/1", true},
		{"x{/segments}", "x/a/b", true},
		{"search{?q,lang}", "search?q=go&lang=en", true},
		{"doc{#frag}", "doc#top", true},
		{"{scheme}://host", "https://host", true},
		{"{id}", "", false},
		{"res://{id", "res://{id", false}, // unclosed expression
		{"pre{a}mid{b}post", "pre1mid2post", true},
		{"pre{a}mid{b}post", "pre1mid2", false},
	} {
		if got := templateMatches(tc.tmpl, tc.uri); got != tc.want {
			t.Errorf("templateMatches(%q, %q) = %v, want %v", tc.tmpl, tc.uri, got, tc.want)
		}
	}
}

func TestSplitName(t *testing.T) {
	dash := New(Config{})
	under := New(Config{Separator: "__"})
	two := []string{"alpha", "beta"}
	for _, tc := range []struct {
		name       string
		cat        *Catalog
		in         string
		servers    []string
		prefixed   bool
		wantServer string
		wantBare   string
		wantOK     bool
	}{
		{"prefixed", dash, "alpha-search", two, true, "alpha", "search", true},
		{"second server", dash, "beta-search", two, true, "beta", "search", true},
		{"first separator splits", dash, "alpha-web-search", two, true, "alpha", "web-search", true},
		{"unknown prefix", dash, "gamma-search", two, true, "", "", false},
		{"prefix not visible", dash, "beta-search", []string{"alpha"}, true, "", "", false},
		{"empty rest", dash, "alpha-", two, true, "", "", false},
		{"no separator", dash, "alpha", two, true, "", "", false},
		{"empty prefix", dash, "-search", two, true, "", "", false},
		{"empty name", dash, "", two, true, "", "", false},
		{"case matters", dash, "Alpha-search", two, true, "", "", false},
		{"no servers", dash, "alpha-search", nil, true, "", "", false},
		{"unprefixed, one server", dash, "alpha-search", []string{"alpha"}, false, "alpha", "alpha-search", true},
		{"unprefixed, bare", dash, "search", []string{"beta"}, false, "beta", "search", true},
		{"unprefixed, empty", dash, "", []string{"beta"}, false, "", "", false},
		{"unprefixed, many servers", dash, "search", two, false, "", "", false},
		{"unprefixed, no servers", dash, "search", nil, false, "", "", false},
		{"custom separator", under, "alpha__search", two, true, "alpha", "search", true},
		{"custom separator, first one", under, "alpha__web__search", two, true, "alpha", "web__search", true},
		{"custom separator keeps dashes", under, "alpha__web-search", two, true, "alpha", "web-search", true},
		{"custom separator, default one is not it", under, "alpha-search", two, true, "", "", false},
		{"custom separator, half of it", under, "alpha_search", two, true, "", "", false},
		{"custom separator, empty rest", under, "alpha__", two, true, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, b, ok := tc.cat.SplitName(tc.in, tc.servers, tc.prefixed)
			if ok != tc.wantOK || ok && (s != tc.wantServer || b != tc.wantBare) {
				t.Fatalf("SplitName(%q, %q, %v) = %q, %q, %v; want %q, %q, %v", tc.in, tc.servers, tc.prefixed, s, b, ok, tc.wantServer, tc.wantBare, tc.wantOK)
			}
		})
	}
}

func TestListKeyKnowsTheFourLists(t *testing.T) {
	for _, m := range []string{mcp.MethodToolsList, mcp.MethodPromptsList, mcp.MethodResourcesList, mcp.MethodResourcesTemplatesList} {
		if listKey(m) == "" {
			t.Errorf("listKey(%q) is empty", m)
		}
	}
	for _, m := range []string{mcp.MethodToolsCall, mcp.MethodDiscover, mcp.MethodResourcesRead, "", "tools/list/"} {
		if k := listKey(m); k != "" {
			t.Errorf("listKey(%q) = %q", m, k)
		}
	}
}

// An item without a name cannot be served under a prefix; it is dropped,
// not served bare.
func TestListDropsNamelessItems(t *testing.T) {
	f := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{
		mcp.MethodToolsList: {json.RawMessage(`{"inputSchema":{}}`), json.RawMessage(`{"name":7}`), json.RawMessage(`{"name":"ok"}`)},
	}})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", fake: f})
	l := mustList(t, cat, Query{Servers: []string{"s"}, Prefixed: true, Binding: "b"}, mcp.MethodToolsList, "")
	if got := l.field("name"); !slices.Equal(got, []string{"s-ok"}) {
		t.Fatalf("tools = %q", got)
	}
}
