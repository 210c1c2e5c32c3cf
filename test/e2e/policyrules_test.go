package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// annotatedUpstream is a go-sdk server (stateless, both eras over HTTP) with three tools: read
// (read-only), remove (destructive) and echo (no annotations: the specification's defaults).
func annotatedUpstream(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "files", Version: "1"}, nil)
	answer := func(name string) sdk.ToolHandler {
		return func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " ran"}}}, nil
		}
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	no := false
	srv.AddTool(&sdk.Tool{Name: "read", InputSchema: schema, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no}}, answer("read"))
	yes := true
	srv.AddTool(&sdk.Tool{Name: "remove", InputSchema: schema, Annotations: &sdk.ToolAnnotations{DestructiveHint: &yes}}, answer("remove"))
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: schema}, answer("echo"))
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(h.Close)
	return h.URL
}

// ruleRow is one rule set and one caller: the tools listed, and per tool whether a call with
// args is served.
type ruleRow struct {
	name     string
	rules    string // the mcp_policies list, YAML flow style
	team     string // the key's team ("" = the master key)
	blocked  string // the key's blocked_tools (JSON list, "" for none)
	args     string
	listed   []string
	called   []string // served calls with args; equal to listed unless a rule reads args
	explains map[string]string
}

func ruleRows() []ruleRow {
	all := []string{"read", "remove", "echo"}
	destructive := `[{name: no-destructive, expr: 'tool.annotations.destructiveHint && caller.team_id != "ops"'}]`
	return []ruleRow{
		{name: "no rules", rules: `[]`, team: "dev", args: `{}`, listed: all, called: all},
		{name: "destructive tools refused outside ops (default hint counts)", rules: destructive, team: "dev", args: `{}`,
			listed: []string{"read"}, called: []string{"read"}, explains: map[string]string{"remove": "no-destructive"}},
		{name: "ops may use destructive tools", rules: destructive, team: "ops", args: `{}`, listed: all, called: all},
		{name: "require read-only", rules: `[{name: ro, effect: require, expr: 'tool.annotations.readOnlyHint'}]`, team: "dev", args: `{}`,
			listed: []string{"read"}, called: []string{"read"}, explains: map[string]string{"echo": "ro"}},
		{name: "server rule spares the master key", rules: `[{name: files-admins, expr: 'server.name == "files" && !caller.is_master'}]`, team: "", args: `{}`,
			listed: all, called: all},
		{name: "server rule refuses a key", rules: `[{name: files-admins, expr: 'server.host.startsWith("127.0.0.1") && !caller.is_master'}]`, team: "dev", args: `{}`,
			listed: nil, called: nil, explains: map[string]string{"read": "files-admins"}},
		{name: "args rule: listed, call with /etc refused", rules: `[{name: no-etc, expr: 'has(args.path) && args.path.startsWith("/etc")'}]`, team: "dev",
			args: `{"path":"/etc/passwd"}`, listed: all, called: nil, explains: map[string]string{"read": "no-etc"}},
		{name: "args rule: call elsewhere served", rules: `[{name: no-etc, expr: 'has(args.path) && args.path.startsWith("/etc")'}]`, team: "dev",
			args: `{"path":"/tmp/x"}`, listed: all, called: all},
		{name: "blocked_tools and a rule together", rules: `[{name: no-remove, expr: 'tool.name == "remove"'}]`, team: "dev", blocked: `["echo"]`, args: `{}`,
			listed: []string{"read"}, called: []string{"read"}, explains: map[string]string{"echo": "blocked_tools", "remove": "no-remove"}},
	}
}

// TestPolicyRulesTable: every row lists, calls (in both eras) and asks the explain endpoint;
// listing and calling agree unless a rule reads args, and the explanation agrees with both.
func TestPolicyRulesTable(t *testing.T) {
	up := annotatedUpstream(t)
	st := storeBackends()[0]
	for _, row := range ruleRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			g := startGatewayWithStoreEnv(t, st, fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_policies: %s
mcp_servers:
  files: {url: %s}
`, testKey, row.rules, up), nil)
			key := testKey
			if row.team != "" {
				if status, m := manage(t, http.MethodPost, g.url+"/team/new", testKey, `{"team_id":"`+row.team+`"}`); status != 200 {
					t.Fatalf("/team/new = %d %v", status, m)
				}
				perm := `{}`
				if row.blocked != "" {
					perm = `{"blocked_tools":` + row.blocked + `}`
				}
				key = generateKey(t, g.url, `{"team_id":"`+row.team+`","object_permission":`+perm+`}`)
			}
			checkRuleRow(t, g.url, key, row)
		})
	}
}

func checkRuleRow(t *testing.T, gw, key string, row ruleRow) {
	t.Helper()
	if !strings.Contains(row.name, "args rule") && !slices.Equal(row.listed, row.called) {
		t.Fatalf("row without an args rule must list what it calls")
	}
	sid := initLegacy(t, gw+"/mcp", key)
	eras := []struct {
		name string
		hdr  func(method, name string) map[string]string
		meta string
	}{
		{"modern", func(m, n string) map[string]string { return modernAs(key, m, n) }, modernMeta},
		{"legacy", func(string, string) map[string]string { return legacyHeaders(key, sid) }, `"_meta":{}`},
	}
	for _, era := range eras {
		_, _, body := rpc(t, gw+"/mcp", era.hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+era.meta+`}}`)
		var listed []string
		for _, name := range toolsOf(body) {
			listed = append(listed, strings.TrimPrefix(name, "files-"))
		}
		if !sameSet(listed, row.listed) {
			t.Errorf("%s tools/list = %v, want %v (%v)", era.name, listed, row.listed, body)
		}
		for _, tool := range []string{"read", "remove", "echo"} {
			name := "files-" + tool
			status, _, res := rpc(t, gw+"/mcp", era.hdr("tools/call", name), callBody(name, row.args, era.meta, ""))
			served := status == 200 && strings.Contains(fmt.Sprint(resultOf(res)["content"]), tool+" ran")
			if want := slices.Contains(row.called, tool); served != want {
				t.Errorf("%s tools/call %s = %d %v, want served %v", era.name, tool, status, res, want)
			}
			if why := row.explains[tool]; why != "" && !served && !strings.Contains(fmt.Sprint(res), why) && !strings.Contains(fmt.Sprint(res), "not allowed") {
				t.Errorf("%s tools/call %s refusal %v names neither %q nor the permission", era.name, tool, res, why)
			}
		}
	}
	for _, tool := range []string{"read", "remove", "echo"} {
		listing := explain(t, gw, key, tool, "")
		calling := explain(t, gw, key, tool, row.args)
		if listing["allowed"] != slices.Contains(row.listed, tool) || calling["allowed"] != slices.Contains(row.called, tool) {
			t.Errorf("explain %s: listing %v calling %v, want %v / %v", tool, listing["allowed"], calling["allowed"],
				slices.Contains(row.listed, tool), slices.Contains(row.called, tool))
		}
		if why := row.explains[tool]; why != "" {
			if b, _ := json.Marshal(calling); !strings.Contains(string(b), why) {
				t.Errorf("explain %s does not name %q: %s", tool, why, b)
			}
		}
	}
}

// explain asks POST /v1/mcp/policy/explain about key's use of tool on server files (with args
// when set, as a call).
func explain(t *testing.T, gw, key, tool, args string) map[string]any {
	t.Helper()
	body := `{"key":"` + key + `","server":"files","tool":"` + tool + `"`
	if args != "" {
		body += `,"arguments":` + args
	}
	status, m := manage(t, http.MethodPost, gw+"/v1/mcp/policy/explain", testKey, body+"}")
	if status != 200 {
		t.Fatalf("explain: %d %v", status, m)
	}
	return m
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestPolicyExplainRefusals: only the proxy admin may ask, and the request is checked.
func TestPolicyExplainRefusals(t *testing.T) {
	up := annotatedUpstream(t)
	g := startGatewayWithStoreEnv(t, storeBackends()[0], fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_policies: [{name: ro, effect: require, expr: 'tool.annotations.readOnlyHint'}]
mcp_servers:
  files: {url: %s}
`, testKey, up), nil)
	user := generateKey(t, g.url, `{}`)
	for _, tc := range []struct {
		key, body string
		want      int
	}{
		{user, `{"key":"` + user + `","server":"files","tool":"read"}`, http.StatusForbidden},
		{testKey, `{"server":"files","tool":"read"}`, http.StatusBadRequest},
		{testKey, `{"key":"sk-nope","server":"files","tool":"read"}`, http.StatusBadRequest},
		{testKey, `{"key":"` + user + `","server":"files","tool":"read","arguments":[1]}`, http.StatusBadRequest},
		{testKey, `{"identity":{"team_id":"x","object_permission":{"blocked_tools":["read"]}},"server":"files","tool":"read"}`, http.StatusOK},
	} {
		status, m := manage(t, http.MethodPost, g.url+"/v1/mcp/policy/explain", tc.key, tc.body)
		if status != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.body, status, m, tc.want)
		}
		if status == http.StatusOK && m["allowed"] != false {
			t.Errorf("%s: %v, want refused by blocked_tools", tc.body, m)
		}
	}
}
