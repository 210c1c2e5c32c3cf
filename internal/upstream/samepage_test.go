package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// TestListPageScratch: a list page read from an SSE answer is compared with
// the last walk's page in the SSE reader's own scratch, which the next
// answer is read into. An unchanged page comes back as the last walk's very
// bytes; a changed one is a copy of its own, which later answers (of the
// same length, read into the same scratch) leave as it was.
func TestListPageScratch(t *testing.T) {
	up, setName := namedToolPages(t)
	c := newClient(t, Config{Name: "u", URL: up.url(), ProtocolVersion: "2025-11-25"})
	list := func(n string) []json.RawMessage {
		t.Helper()
		setName(n)
		items, err := c.ListTools(context.Background(), Options{})
		if err != nil || len(items) != 1 {
			t.Fatalf("list %s: %d items, %v", n, len(items), err)
		}
		return items
	}
	want := func(n string) string { return fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, n) }
	first := list("t000")
	if again := list("t000"); &again[0][0] != &first[0][0] {
		t.Fatal("an unchanged page was not the last walk's bytes")
	}
	var kept [][]json.RawMessage
	for i := 1; i <= 30; i++ {
		kept = append(kept, list(fmt.Sprintf("t%03d", i)))
		for j, items := range kept {
			if got := string(items[0]); got != want(fmt.Sprintf("t%03d", j+1)) {
				t.Fatalf("after walk %d, walk %d's page reads %s", i, j+1, got)
			}
		}
	}
	if string(first[0]) != want("t000") {
		t.Fatalf("the first page reads %s", first[0])
	}
}

// TestUnchangedPageRawOutlivesTheScratch: the result of an unchanged SSE page
// (as a middleware sees it) is the kept page, not the reader's scratch: it
// reads the same after later answers are read into that scratch.
func TestUnchangedPageRawOutlivesTheScratch(t *testing.T) {
	up, setName := namedToolPages(t)
	var raws []json.RawMessage
	keep := func(next CallFunc) CallFunc {
		return func(ctx context.Context, method string, params json.RawMessage, opts Options) (Result, error) {
			res, err := next(ctx, method, params, opts)
			if method == "tools/list" {
				raws = append(raws, res.Raw)
			}
			return res, err
		}
	}
	c := newClient(t, Config{Name: "u", URL: up.url(), ProtocolVersion: "2025-11-25", Middleware: []Middleware{keep}})
	for i, n := range []string{"t000", "t000", "t001", "t002"} {
		setName(n)
		if _, err := c.ListTools(context.Background(), Options{}); err != nil {
			t.Fatal(i, err)
		}
	}
	if !bytes.Contains(raws[1], []byte(`"t000"`)) {
		t.Fatalf("walk 2's (unchanged) result now reads %s", raws[1])
	}
}

// namedToolPages serves a legacy upstream whose tools/list answers (over SSE)
// a page of one tool, named by the last setName (first "t000").
func namedToolPages(t *testing.T) (up *fakeUpstream, setName func(string)) {
	var mu sync.Mutex
	name := "t000"
	up = legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		mu.Lock()
		n := name
		mu.Unlock()
		writeSSE(w, toolsPage(m.ID, n))
	})
	return up, func(n string) {
		mu.Lock()
		name = n
		mu.Unlock()
	}
}
