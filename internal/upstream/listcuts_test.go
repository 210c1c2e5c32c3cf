package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// A walk reports where the upstream's pages ended, in the items it returns:
// empty pages leave no cut, and tools dropped for invalid x-mcp-header
// annotations move the cuts after them.
func TestListWalkReportsPageCuts(t *testing.T) {
	const bad = `"inputSchema":{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}`
	for _, tc := range []struct {
		name  string
		pages [][]string // tool names per page; a name starting with "bad" has an invalid annotation
		items []string
		cuts  []int
	}{
		{name: "one page", pages: [][]string{{"a", "b"}}, items: []string{"a", "b"}},
		{name: "one tool per page", pages: [][]string{{"a"}, {"b"}, {"c"}}, items: []string{"a", "b", "c"}, cuts: []int{1, 2}},
		{name: "uneven pages", pages: [][]string{{"a", "b", "c"}, {"d"}, {"e", "f"}}, items: []string{"a", "b", "c", "d", "e", "f"}, cuts: []int{3, 4}},
		{name: "empty pages leave no cut", pages: [][]string{{}, {"a"}, {}, {}, {"b"}, {}}, items: []string{"a", "b"}, cuts: []int{1}},
		{name: "all empty", pages: [][]string{{}, {}}},
		{name: "a dropped tool moves the cuts after it", pages: [][]string{{"a", "bad1"}, {"b"}, {"bad2", "c"}}, items: []string{"a", "b", "c"}, cuts: []int{1, 2}},
		{name: "a page of dropped tools leaves no cut", pages: [][]string{{"a"}, {"bad1"}, {"b"}}, items: []string{"a", "b"}, cuts: []int{1}},
		{name: "dropped at the edges", pages: [][]string{{"bad1"}, {"a"}, {"bad2"}}, items: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				var p struct {
					Cursor string `json:"cursor"`
				}
				_ = json.Unmarshal(m.Params, &p)
				n, _ := strconv.Atoi(p.Cursor)
				tools := make([]string, 0, len(tc.pages[n]))
				for _, name := range tc.pages[n] {
					tool := `{"name":"` + name + `"`
					if strings.HasPrefix(name, "bad") {
						tool += "," + bad
					}
					tools = append(tools, tool+"}")
				}
				next := ""
				if n+1 < len(tc.pages) {
					next = strconv.Itoa(n + 1)
				}
				body := fmt.Sprintf(`{"tools":[%s],"nextCursor":%q}`, strings.Join(tools, ","), next)
				writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(body)))
			})
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
			res, err := c.List(context.Background(), mcp.MethodToolsList, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range res.Items {
				name, _ := jsonrpc.StringMember(it, "name")
				names = append(names, name)
			}
			if !slices.Equal(names, tc.items) || !slices.Equal(res.Cuts, tc.cuts) {
				t.Fatalf("items %v cuts %v, want %v cuts %v", names, res.Cuts, tc.items, tc.cuts)
			}
		})
	}
}
