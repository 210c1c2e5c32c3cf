package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostileText is what the hostile server's prompt and resource say: markup that would run if
// a page rendered it as HTML.
const hostileText = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`

// startHostile starts a go-sdk server over streamable HTTP with a prompt and a text resource
// that both answer hostileText, and a binary resource, and returns its URL.
func startHostile(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "hostile", Version: "1"}, nil)
	srv.AddPrompt(&sdk.Prompt{Name: "hostile_prompt", Description: "Answers markup."},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: hostileText}}}}, nil
		})
	srv.AddResource(&sdk.Resource{Name: "page", URI: "hostile://page", MIMEType: "text/html"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html", Text: hostileText}}}, nil
		})
	srv.AddResource(&sdk.Resource{Name: "blob", URI: "hostile://blob", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte("0123456789")}}}, nil
		})
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(h.Close)
	return h.URL + "/mcp"
}

// listen opens a subscriptions/listen for tool list changes on url as the master key and keeps
// it open until the test ends.
func listen(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Authorization": "Bearer " + masterKey, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("listen = %d %s", resp.StatusCode, b)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
}

// progressOrder reads the try panel's event list: each entry's kind and when it was shown.
const progressOrder = `Array.from(document.querySelectorAll('#try-events li')).map(function(e){return {kind:e.dataset.kind,t:Number(e.dataset.t)}})`

// noMarkupRan is true when the result holds no element the hostile text would make, and none
// of its script ran.
const noMarkupRan = `document.querySelectorAll('#try-result script, #try-result img').length === 0 && window.pwned === undefined`

// TestUICatalogInBrowser drives the catalog in chromium: each server's outcome per list; a
// tool call whose progress is shown as it streams, before its result; a prompt got with its
// arguments; a resource and a templated resource read; markup in a prompt's or a resource's
// text shown as text, a blob as its type and size; and the servers page's listens per server.
func TestUICatalogInBrowser(t *testing.T) {
	hostile := startHostile(t)
	g, _ := startGatewayWith(t, nil, "  hostile:\n    url: "+hostile+"\n")
	ctx := newBrowser(t)
	dir := artifacts(t)
	run(t, ctx, "sign in", chromedp.Navigate(g.url+"/ui"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), masterKey), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS(`#servers tbody tr[data-name="secretive"]`)))

	run(t, ctx, "catalog", chromedp.Navigate(g.url+"/ui/catalog"),
		chromedp.WaitVisible(chromedp.CSS(`#outcomes tr[data-server="hostile"]`)))
	waitText(t, ctx, "hostile's prompts outcome", `#outcomes tr[data-server="hostile"] .prompts`, "ok · 1")
	waitText(t, ctx, "hostile's resources outcome", `#outcomes tr[data-server="hostile"] .resources`, "ok · 2")
	waitText(t, ctx, "the fixture's prompts outcome", `#outcomes tr[data-server="secretive"] .prompts`, "ok · 5")
	waitText(t, ctx, "the fixture's templates outcome", `#outcomes tr[data-server="secretive"] .templates`, "ok · 1")

	// A tool that reports progress: the updates are shown as they arrive, then the result.
	run(t, ctx, "try the progress tool", chromedp.Click(chromedp.CSS(`button[data-tool="secretive/test_tool_with_progress"]`)),
		chromedp.WaitVisible(chromedp.ID("try-run")), chromedp.Click(chromedp.ID("try-run")))
	waitText(t, ctx, "the call ends", "#try-progress", "Done in")
	waitText(t, ctx, "a progress message", "#try-events", "Completed step 50 of 100")
	type shown struct {
		Kind string  `json:"kind"`
		T    float64 `json:"t"`
	}
	order := evaluate[[]shown](t, ctx, "read the event order", progressOrder)
	if len(order) < 2 || order[0].Kind != "progress" || order[len(order)-1].Kind != "result" {
		t.Fatalf("events shown: %+v, want progress first and the result last", order)
	}
	// The fixture waits 50 ms after each update: updates shown as they streamed precede the
	// result by at least that; a page that waited for the whole answer shows them together.
	if gap := order[len(order)-1].T - order[0].T; gap < 50 {
		t.Errorf("the first update was shown %.0f ms before the result, want ≥ 50 (read as it streams)", gap)
	}
	if v := evaluate[float64](t, ctx, "the progress bar", `document.getElementById('try-bar').value`); v != 100 {
		t.Errorf("the progress bar shows %v, want 100", v)
	}
	screenshot(t, ctx, dir, "catalog-progress")

	// A prompt with arguments; markup in an argument comes back as text.
	run(t, ctx, "get a prompt", chromedp.Click(chromedp.CSS(`button[data-prompt="secretive/test_prompt_with_arguments"]`)),
		chromedp.WaitVisible(chromedp.ID("arg-arg1")),
		chromedp.SendKeys(chromedp.ID("arg-arg1"), "<script>window.pwned=3</script>"),
		chromedp.SendKeys(chromedp.ID("arg-arg2"), "two"), chromedp.Click(chromedp.ID("try-run")))
	waitText(t, ctx, "the prompt's text", "#try-result", "Prompt with arguments: arg1='<script>window.pwned=3</script>', arg2='two'")
	screenshot(t, ctx, dir, "catalog-prompt")
	for _, c := range []struct{ step, button, want string }{
		{"a prompt answering markup", `button[data-prompt="hostile/hostile_prompt"]`, hostileText},
		{"a resource of markup", `button[data-uri="hostile://page"]`, hostileText},
		{"a binary resource", `button[data-uri="hostile://blob"]`, "blob · application/octet-stream · 10 bytes (not shown)"},
		{"the fixture's binary resource", `button[data-uri="test://static-binary"]`, "blob · image/png · 70 bytes"},
	} {
		run(t, ctx, c.step, chromedp.Click(chromedp.CSS(c.button)), chromedp.WaitVisible(chromedp.ID("try-run")), chromedp.Click(chromedp.ID("try-run")))
		waitText(t, ctx, c.step, "#try-result", c.want)
		if !evaluate[bool](t, ctx, c.step+": no markup", noMarkupRan) {
			t.Errorf("%s: the result was rendered as HTML", c.step)
		}
	}
	screenshot(t, ctx, dir, "catalog-resource")
	run(t, ctx, "read a templated resource", chromedp.Click(chromedp.CSS(`button[data-template="test://template/{id}/data"]`)),
		chromedp.WaitVisible(chromedp.ID("arg-id")), chromedp.SendKeys(chromedp.ID("arg-id"), "42"), chromedp.Click(chromedp.ID("try-run")))
	waitText(t, ctx, "the templated resource", "#try-result", "Data for ID: 42")

	// A listen on one server: the servers page counts it there and nowhere else.
	listen(t, g.url+"/secretive/mcp")
	run(t, ctx, "servers page", chromedp.Navigate(g.url+"/ui/servers"),
		chromedp.WaitVisible(chromedp.CSS(`#servers tr[data-name="hostile"]`)))
	waitText(t, ctx, "the listen on secretive", `#servers tr[data-name="secretive"] .listens`, "1")
	waitText(t, ctx, "no listen on hostile", `#servers tr[data-name="hostile"] .listens`, "0")
	waitText(t, ctx, "the listens in all", "#listens", "1 listen open")
	screenshot(t, ctx, dir, "servers-listens")
}
