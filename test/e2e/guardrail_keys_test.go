package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
)

// TestGuardrailsPerKeyAndTeam: guardrails a key or its team names (the top-level guardrails
// field of /key/generate, /key/update and /team/new, kept as LiteLLM keeps it in
// metadata.guardrails) run on that key's tool calls beside the server's own (here none),
// through a real HTTP guardrail service; a key naming none is not checked.
func TestGuardrailsPerKeyAndTeam(t *testing.T) {
	gs := startGuardService(t)
	up := startGuardedUpstream(t)
	rail := func(name, mode string) string {
		return fmt.Sprintf(`
  - guardrail_name: %s
    litellm_params:
      guardrail: generic_guardrail_api
      mode: %s
      api_base: %s
      headers: {x-guard: %s}`, name, mode, gs.url, name)
	}
	gw := startGatewayWith(t, fmt.Sprintf(`
general_settings:
  master_key: %s
guardrails:%s%s
mcp_servers:
  plain:
    url: %s
`, testKey, rail("pre-key", "pre_mcp_call"), rail("post", "post_mcp_call"), up.url), nil, app.WithDataDir(t.TempDir()))

	guarded := generateKey(t, gw.url, `{"user_id":"alice","guardrails":["pre-key"]}`)
	plain := generateKey(t, gw.url, `{"user_id":"bob"}`)
	if status, m := manage(t, http.MethodPost, gw.url+"/team/new", testKey, `{"team_id":"kitchen","guardrails":["post"]}`); status != 200 {
		t.Fatalf("/team/new: %d %v", status, m)
	}
	member := generateKey(t, gw.url, `{"user_id":"carol","team_id":"kitchen"}`)

	echo := func(key, msg string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"message": msg})
		_, _, body := rpc(t, gw.url+"/mcp", modernAs(key, "tools/call", "plain-echo"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain-echo","arguments":`+string(args)+`,`+modernMeta+`}}`)
		if msg := errMessage(body); msg != "" {
			return "error: " + msg
		}
		res, _ := body["result"].(map[string]any)
		return fmt.Sprint(res["content"])
	}
	if got := echo(guarded, "please BLOCKME"); !strings.Contains(got, "Content blocked by guardrail 'pre-key'") {
		t.Fatalf("a key naming pre-key: %s", got)
	}
	if got := echo(guarded, "my secret plan"); !strings.Contains(got, "Echo: my [REDACTED] plan") || up.last() != "my [REDACTED] plan" {
		t.Fatalf("a key naming pre-key, rewrite: %s (upstream saw %q)", got, up.last())
	}
	if got := echo(plain, "please BLOCKME"); !strings.Contains(got, "Echo: please BLOCKME") {
		t.Fatalf("a key naming no guardrail: %s", got)
	}
	if got := echo(member, "tomato soup"); !strings.Contains(got, "Echo: potato soup") {
		t.Fatalf("a key whose team names post: %s", got)
	}
	if got := echo(plain, "tomato soup"); !strings.Contains(got, "Echo: tomato soup") {
		t.Fatalf("a key outside the team: %s", got)
	}

	// /key/update adds the guardrail to a key; its metadata is kept.
	if status, m := manage(t, http.MethodPost, gw.url+"/key/update", testKey, `{"key":"`+plain+`","metadata":{"note":"x"}}`); status != 200 {
		t.Fatalf("/key/update: %d %v", status, m)
	}
	if status, m := manage(t, http.MethodPost, gw.url+"/key/update", testKey, `{"key":"`+plain+`","guardrails":["pre-key"]}`); status != 200 {
		t.Fatalf("/key/update: %d %v", status, m)
	}
	deadline := time.Now().Add(5 * time.Second)
	got := echo(plain, "please BLOCKME")
	for !strings.Contains(got, "blocked by guardrail 'pre-key'") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		got = echo(plain, "please BLOCKME")
	}
	if !strings.Contains(got, "blocked by guardrail 'pre-key'") {
		t.Fatalf("after /key/update added pre-key: %s", got)
	}
	status, info := manage(t, http.MethodGet, gw.url+"/key/info?key="+plain, testKey, "")
	if meta := fmt.Sprint(info); status != 200 || !strings.Contains(meta, "note:x") || !strings.Contains(meta, "guardrails:[pre-key]") {
		t.Fatalf("/key/info after the update: %d %v", status, info)
	}
}
