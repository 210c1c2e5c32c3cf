package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// pagedUpstream is a go-sdk server over streamable HTTP whose tools/list
// answers in pages of the given sizes (a zero size is an empty page), the
// cursor naming the next page, with a ttlMs so that lists are cached. It
// counts its tools/list requests.
type pagedUpstream struct {
	url   string
	lists atomic.Int32
}

func startPagedUpstream(t *testing.T, names []string, sizes []int) *pagedUpstream {
	t.Helper()
	up := &pagedUpstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "paged", Version: "1"}, nil)
	for _, n := range names {
		srv.AddTool(&sdk.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	}
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			p, ok := req.GetParams().(*sdk.ListToolsParams)
			if method != mcp.MethodToolsList || !ok {
				return next(ctx, method, req)
			}
			up.lists.Add(1)
			page, _ := strconv.Atoi(p.Cursor)
			p.Cursor = "" // the whole list, cut here
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			all := res.(*sdk.ListToolsResult)
			byName := map[string]*sdk.Tool{}
			for _, tool := range all.Tools {
				byName[tool.Name] = tool
			}
			start := 0
			for _, n := range sizes[:page] {
				start += n
			}
			out := &sdk.ListToolsResult{Tools: []*sdk.Tool{}}
			for _, n := range names[start : start+sizes[page]] {
				out.Tools = append(out.Tools, byName[n])
			}
			if page+1 < len(sizes) {
				out.NextCursor = strconv.Itoa(page + 1)
			}
			out.TTLMs, out.CacheScope = 60_000, "public"
			return out, nil
		}
	})
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	t.Cleanup(h.Close)
	up.url = h.URL
	return up
}

// The aggregate's pages follow its upstreams' pages: a page ends where an
// upstream page ended or after the page size, whichever comes first, and
// the cursors chain through the whole aggregate, in order, with nothing lost
// or repeated, whether the lists come from the upstreams or the cache.
func TestPagesFollowUpstreamPages(t *testing.T) {
	type server struct {
		tools int
		sizes []int // the upstream's pages
	}
	for _, tc := range []struct {
		name     string
		servers  []server
		pageSize int
		hide     func(tool string) bool // tools the caller may not see
		pages    []int                  // items per gateway page
	}{
		{name: "one tool per upstream page", servers: []server{{3, []int{1, 1, 1}}}, pageSize: PageSize, pages: []int{1, 1, 1}},
		{name: "uneven pages of two servers", servers: []server{{4, []int{3, 1}}, {4, []int{2, 2}}}, pageSize: PageSize, pages: []int{3, 3, 2}},
		{name: "page size smaller than upstream pages", servers: []server{{5, []int{5}}, {4, []int{3, 1}}}, pageSize: 2, pages: []int{2, 2, 2, 2, 1}},
		{name: "page size larger than some upstream pages", servers: []server{{6, []int{1, 5}}, {2, []int{2}}}, pageSize: 4, pages: []int{1, 4, 3}},
		{name: "unpaged servers share a page as before", servers: []server{{2, []int{2}}, {2, []int{2}}, {1, []int{1}}}, pageSize: PageSize, pages: []int{5}},
		{name: "unpaged servers beyond the page size", servers: []server{{3, []int{3}}, {2, []int{2}}}, pageSize: 2, pages: []int{2, 2, 1}},
		{name: "empty upstream pages leave no empty page", servers: []server{{4, []int{0, 2, 0, 0, 2, 0}}}, pageSize: PageSize, pages: []int{2, 2}},
		{name: "a page the caller sees nothing of leaves no empty page", servers: []server{{6, []int{2, 2, 2}}, {1, []int{1}}},
			pageSize: PageSize, hide: func(tool string) bool { return tool == "t0002" || tool == "t0003" }, pages: []int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ups []upSpec
			var servers, want []string
			var fakes []*pagedUpstream
			for i, s := range tc.servers {
				name := fmt.Sprintf("s%d", i)
				names := numbered("t", s.tools)
				up := startPagedUpstream(t, names, s.sizes)
				fakes = append(fakes, up)
				ups = append(ups, upSpec{name: name, url: up.url})
				servers = append(servers, name)
				for _, n := range names {
					if tc.hide == nil || !tc.hide(n) {
						want = append(want, name+"-"+n)
					}
				}
			}
			cat := newTestCatalog(t, Config{}, ups...)
			cat.pageSize = tc.pageSize
			q := Query{Servers: servers, Prefixed: true, Binding: "v1;u=alice|"}
			if tc.hide != nil {
				q.AllowTool = func(_, tool string) bool { return !tc.hide(tool) }
			}
			lists := func() int32 {
				var n int32
				for _, f := range fakes {
					n += f.lists.Load()
				}
				return n
			}
			check := func(from string) {
				t.Helper()
				pages := walk(t, cat, q, mcp.MethodToolsList)
				var sizes []int
				var got []string
				for _, p := range pages {
					sizes = append(sizes, len(p.items))
					got = append(got, p.field("name")...)
				}
				if !slices.Equal(sizes, tc.pages) {
					t.Fatalf("%s: pages of %v items, want %v", from, sizes, tc.pages)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: the pages hold %v, want %v once each, in order", from, got, want)
				}
			}
			check("from the upstreams")
			before := lists()
			check("from the cache")
			if n := lists(); n != before {
				t.Fatalf("the second walk asked the upstreams %d more times; want the cached lists", n-before)
			}
			// A replica without the walk's snapshot cuts the same pages.
			first := mustList(t, cat, q, mcp.MethodToolsList, "")
			if first.next != "" {
				twin := newTestCatalog(t, Config{}, ups...)
				twin.pageSize = tc.pageSize
				if second := mustList(t, twin, q, mcp.MethodToolsList, first.next); len(second.items) != tc.pages[1] {
					t.Fatalf("the second page on another replica holds %d items, want %d", len(second.items), tc.pages[1])
				}
			}
			// A whole listing (REST) is one page with every item.
			whole := q
			whole.Whole = true
			all := mustList(t, cat, whole, mcp.MethodToolsList, "")
			if all.next != "" || !slices.Equal(all.field("name"), want) {
				t.Fatalf("whole listing: %v (next %q), want %v", all.field("name"), all.next, want)
			}
		})
	}
}

// Later pages of a walk follow the upstream's pages as they were when the
// walk began, even when the upstream changes mid-walk.
func TestPageCutsKeptWithTheSnapshot(t *testing.T) {
	names := numbered("t", 3)
	up := startPagedUpstream(t, names, []int{1, 2})
	cat := newTestCatalog(t, Config{}, upSpec{name: "s", url: up.url})
	q := Query{Servers: []string{"s"}, Prefixed: true, Binding: "v1;u=alice|"}
	first := mustList(t, cat, q, mcp.MethodToolsList, "")
	if got := strings.Join(first.field("name"), ","); got != "s-t0000" || first.next == "" {
		t.Fatalf("first page %s, next %q", got, first.next)
	}
	cat.ListChanged("s", mcp.NotifToolsListChanged)
	before := up.lists.Load()
	second := mustList(t, cat, q, mcp.MethodToolsList, first.next)
	if got := strings.Join(second.field("name"), ","); got != "s-t0001,s-t0002" || second.next != "" {
		t.Fatalf("second page %s, next %q", got, second.next)
	}
	if up.lists.Load() != before {
		t.Fatal("a later page asked the upstream instead of the walk's snapshot")
	}
}

// appendOutcomes writes what encoding/json writes for the same map.
func TestAppendOutcomesEncodesAsEncodingJSON(t *testing.T) {
	n, m := 3, 0
	for _, tc := range []map[string]Outcome{
		nil,
		{},
		{"s1": {Status: "ok", ToolCount: &n}},
		{"b": {Status: "ok", Count: &m}, "a": {Status: "auth_required", HTTPStatus: 401}, "c<&>": {Status: "timeout"}},
		{"é\"\\\x01": {Status: "skipped", Count: &n, ToolCount: &m, HTTPStatus: 503}},
	} {
		want, err := json.Marshal(tc)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendOutcomes(nil, tc); string(got) != string(want) {
			t.Errorf("appendOutcomes(%v) = %s, want %s", tc, got, want)
		}
	}
}
