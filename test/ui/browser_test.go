package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium is the browser to drive: MCPGW_CHROMIUM, else chromium on PATH. Without one the
// test skips, or fails when MCPGW_REQUIRE_PEERS=1 (scripts/test.sh installs Debian's).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPGW_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium is not installed (apt-get install -y chromium; scripts/test.sh does this)"
		if os.Getenv("MCPGW_REQUIRE_PEERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// artifacts is where screenshots go: MCPGW_UI_ARTIFACTS, else a test temp dir.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MCPGW_UI_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newBrowser starts headless chromium at a laptop's window size.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// screenshot saves the whole page as dir/name.png.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs actions, failing the test with what step failed.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// waitText polls until the text of sel contains want.
func waitText(t *testing.T, ctx context.Context, step, sel, want string) string {
	t.Helper()
	var got string
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){var e=document.querySelector(`+jsString(sel)+`);return e?e.textContent:""})()`))
		if strings.Contains(got, want) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %s shows %q, want it to contain %q", step, sel, got, want)
	return ""
}

// evaluate runs expr in the page and returns its value.
func evaluate[T any](t *testing.T, ctx context.Context, step, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestUIInBrowser drives the UI in chromium: sign in, add a server and see it turn healthy,
// try one of its tools and see the result, create a key limited to that server and see the
// preview (and the gateway) list only its tools, and see the call in the live log. Each page
// is saved as a screenshot.
func TestUIInBrowser(t *testing.T) {
	g, fixture := startGateway(t, nil)
	ctx := newBrowser(t)
	dir := artifacts(t)

	run(t, ctx, "sign-in page", chromedp.Navigate(g.url+"/ui"), chromedp.WaitVisible(chromedp.ID("key")))
	screenshot(t, ctx, dir, "login")
	run(t, ctx, "sign in", chromedp.SendKeys(chromedp.ID("key"), masterKey), chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS(`#servers tbody tr[data-name="secretive"]`)))

	// Add a server, after testing the connection.
	run(t, ctx, "fill the server form",
		chromedp.SendKeys(chromedp.CSS(`#add-server input[name="server_name"]`), "fixture"),
		chromedp.SendKeys(chromedp.CSS(`#add-server input[name="url"]`), fixture),
		chromedp.Click(chromedp.ID("test-connection")))
	waitText(t, ctx, "test connection", "#test-result", "Connection ok")
	run(t, ctx, "add the server", chromedp.Click(chromedp.ID("save-server")))
	waitText(t, ctx, "the new server turns healthy", `#servers tr[data-name="fixture"] .health`, "healthy")
	waitText(t, ctx, "its tools are counted", `#servers tr[data-name="fixture"] .tools`, "")
	screenshot(t, ctx, dir, "servers")
	run(t, ctx, "edit the stored server", chromedp.Click(chromedp.CSS(`#servers tr[data-name="fixture"] button[aria-label="Edit fixture"]`)),
		chromedp.WaitVisible(chromedp.ID("editing")), chromedp.Click(chromedp.ID("save-server")))
	waitText(t, ctx, "the edit is saved", "#status", "Saved fixture")
	waitText(t, ctx, "the edited server stays healthy", `#servers tr[data-name="fixture"] .health`, "healthy")

	// Try a tool.
	run(t, ctx, "catalog", chromedp.Navigate(g.url+"/ui/catalog"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-tool="fixture/test_simple_text"]`)),
		chromedp.Click(chromedp.CSS(`button[data-tool="fixture/test_simple_text"]`)),
		chromedp.WaitVisible(chromedp.ID("try-run")), chromedp.Click(chromedp.ID("try-run")))
	waitText(t, ctx, "the tool's result", "#try-result", "This is a simple text response for testing.")
	waitText(t, ctx, "the call's progress line", "#try-progress", "Done in")
	screenshot(t, ctx, dir, "catalog")

	// A key limited to the new server: the preview, then the gateway, list only its tools.
	run(t, ctx, "keys page", chromedp.Navigate(g.url+"/ui/keys"),
		chromedp.WaitVisible(chromedp.CSS(`#perm-servers input[value="fixture"]`)),
		chromedp.Click(chromedp.CSS(`#perm-servers input[value="fixture"]`)),
		chromedp.SendKeys(chromedp.CSS(`#new-key input[name="key_alias"]`), "fixture-only"))
	preview := evaluate[[]string](t, ctx, "read the preview",
		`Array.from(document.querySelectorAll('#preview li[data-tool]')).map(function(e){return e.dataset.tool})`)
	if len(preview) == 0 {
		t.Fatal("the preview lists no tools")
	}
	for _, tool := range preview {
		if !strings.HasPrefix(tool, "fixture/") {
			t.Errorf("the preview lists %s, not a tool of fixture", tool)
		}
	}
	run(t, ctx, "create the key", chromedp.Click(chromedp.ID("create-key")),
		chromedp.WaitVisible(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS("#seen li")))
	waitText(t, ctx, "the new key in the list", "#keys tbody", "fixture-only")
	secret := evaluate[string](t, ctx, "read the secret", `document.getElementById('secret').textContent`)
	seen := evaluate[[]string](t, ctx, "read what the key sees",
		`Array.from(document.querySelectorAll('#seen li')).map(function(e){return e.dataset.tool})`)
	if !strings.HasPrefix(secret, "sk-") {
		t.Errorf("the secret shown is %q", secret)
	}
	if len(seen) != len(preview) {
		t.Errorf("the gateway shows the new key %d tools, the preview %d", len(seen), len(preview))
	}
	for _, tool := range seen {
		if !strings.HasPrefix(tool, "fixture/") {
			t.Errorf("the new key sees %s", tool)
		}
	}
	screenshot(t, ctx, dir, "keys")
	run(t, ctx, "create an organisation", chromedp.SendKeys(chromedp.CSS(`#new-org input[name="organization_alias"]`), "acme"),
		chromedp.Click(chromedp.CSS(`#new-org button`)))
	waitText(t, ctx, "the organisation in the list", "#orgs", "acme")

	// The call made on the catalog page is in the live log; the charts show the server.
	run(t, ctx, "activity page", chromedp.Navigate(g.url+"/ui/activity"),
		chromedp.WaitVisible(chromedp.CSS(`#charts figure[data-server="fixture"]`)))
	waitText(t, ctx, "the call in the live log", "#log tbody", "test_simple_text")
	// A call made now arrives on the open stream.
	status, body := g.api(t, masterKey, "POST", "/mcp-rest/tools/call", `{"server_id":"fixture","name":"test_image_content","arguments":{}}`)
	if status != 200 {
		t.Fatalf("REST call = %d %s", status, body)
	}
	waitText(t, ctx, "a new call arrives live", "#log tbody", "test_image_content")
	screenshot(t, ctx, dir, "activity")

	// Dark theme on a phone-sized screen.
	run(t, ctx, "phone, dark", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(g.url+"/ui/servers"), chromedp.WaitVisible(chromedp.CSS(`#servers tr[data-name="fixture"]`)),
		chromedp.Click(chromedp.ID("theme")))
	theme := evaluate[string](t, ctx, "read the theme", `document.documentElement.dataset.theme || ""`)
	if theme == "" {
		t.Error("the theme button set no theme")
	}
	screenshot(t, ctx, dir, "servers-phone-"+theme)
}
