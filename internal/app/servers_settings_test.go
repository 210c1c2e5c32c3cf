package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// TestStoredServerGuardrailsFollowTheFile: a stored server's guardrails name the config file's
// guardrails; a file reload that drops one it names leaves the server out with a warning (it
// never runs without its guardrail), and one that brings the guardrail back serves it again.
func TestStoredServerGuardrailsFollowTheFile(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("a")}})
	yaml := minimal + "  store_model_in_db: true\n"
	withRail := yaml + "guardrails:\n  - guardrail_name: post\n    litellm_params: {guardrail: generic_guardrail_api, mode: post_mcp_call, api_base: http://127.0.0.1:1}\n"
	var log fakemcp.LogBuffer
	a, err := app.New(parse(t, withRail), app.WithDataDir(t.TempDir()), app.WithLogger(log.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	base := serveApp(t, a)
	status, body := api(t, "POST", base+"/v1/mcp/server", fmt.Sprintf(`{"server_name":"dyn","url":%q,"guardrails":["post"],
		"protocol_version":"2025-11-25"}`, up.url))
	if status != http.StatusCreated || !strings.Contains(body, `"guardrails":["post"]`) {
		t.Fatalf("POST = %d %s", status, body)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/a"}) {
		t.Fatalf("tools = %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Apply(ctx, parse(t, yaml)); err != nil {
		t.Fatal(err)
	}
	if got := restTools(t, base); len(got) != 0 {
		t.Fatalf("tools once the file lost the guardrail = %q, want none", got)
	}
	if l := log.String(); !strings.Contains(l, "stored mcp server left out") || !strings.Contains(l, `guardrails names \"post\"`) {
		t.Fatalf("no warning naming the missing guardrail: %s", l)
	}
	if err := a.Apply(ctx, parse(t, withRail)); err != nil {
		t.Fatal(err)
	}
	if got := restTools(t, base); !slices.Equal(got, []string{"dyn/a"}) {
		t.Fatalf("tools once the guardrail is back = %q", got)
	}
}
