package ui

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestUIMCPTakesOnlyTheCatalogsRequests: /ui/mcp needs a session, the same origin and the
// session's CSRF token; it sends only the catalog's methods (never a listen) and refuses a
// request that names no item; a tool call asking for progress is answered as a stream whose
// progress notifications come before the result, through the gateway's own /mcp.
func TestUIMCPTakesOnlyTheCatalogsRequests(t *testing.T) {
	g, _ := startGateway(t, nil)
	b, _ := g.signIn(t, masterKey)
	call := `{"method":"tools/call","params":{"name":"secretive-test_tool_with_progress","arguments":{}},"progress":true}`
	if s, _, _ := do(t, "POST", g.url+"/ui/mcp", map[string]string{"Authorization": "Bearer " + masterKey,
		"Content-Type": "application/json", "Origin": g.url}, call); s != http.StatusUnauthorized {
		t.Errorf("without a session (the master key as bearer) = %d, want 401", s)
	}
	good := b.sameOriginHeaders()
	noToken := map[string]string{"Origin": g.url, "Sec-Fetch-Site": "same-origin"}
	crossSite := map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "X-CSRF-Token": b.csrf}
	for name, hdr := range map[string]map[string]string{"no CSRF token": noToken, "cross-site": crossSite} {
		if s, body := b.post(t, "/ui/mcp", call, hdr); s != http.StatusForbidden {
			t.Errorf("%s = %d %s, want 403", name, s, body)
		}
	}
	for name, body := range map[string]string{
		"a listen":         `{"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`,
		"initialize":       `{"method":"initialize","params":{}}`,
		"a call of no one": `{"method":"tools/call","params":{"arguments":{}}}`,
		"params not JSON":  `{"method":"tools/list","params":[1]}`,
		"not JSON":         `method=tools/list`,
	} {
		if s, out := b.post(t, "/ui/mcp", body, good); s != http.StatusBadRequest {
			t.Errorf("%s = %d %s, want 400", name, s, out)
		}
	}
	s, out := b.post(t, "/ui/mcp", call, good)
	first, result := strings.Index(out, `"method":"notifications/progress"`), strings.Index(out, `"result":`)
	if s != 200 || first < 0 || result < first || !strings.Contains(out, "event: message") {
		t.Fatalf("tools/call with progress = %d %s, want an SSE stream with progress before the result", s, out)
	}
	s, out = b.post(t, "/ui/mcp", `{"method":"prompts/list"}`, good)
	if s != 200 || !strings.Contains(out, `"litellm.ai/server_outcomes":{"secretive":{"status":"ok"`) {
		t.Errorf("prompts/list = %d %s, want the aggregate with its per-server outcomes", s, out)
	}
}

// TestUIStatsCountListensPerServer: /ui/stats counts each listen for every server it holds an
// upstream listener on: an aggregate listen for tool list changes counts for the server that
// announces them and not for one without tools; a scoped listen adds one to its server.
func TestUIStatsCountListensPerServer(t *testing.T) {
	g, _ := startGatewayWith(t, nil, "  hostile:\n    url: "+startHostile(t)+"\n")
	b, _ := g.signIn(t, masterKey)
	stats := func() (total int, by map[string]int) {
		t.Helper()
		s, _, body := b.get(t, "/ui/stats")
		var out struct {
			Upstream struct {
				Listens int            `json:"listens"`
				By      map[string]int `json:"listens_by_server"`
			} `json:"upstream"`
		}
		if s != 200 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("GET /ui/stats = %d %s", s, body)
		}
		return out.Upstream.Listens, out.Upstream.By
	}
	if total, by := stats(); total != 0 || len(by) != 0 {
		t.Fatalf("before any listen: %d, %v", total, by)
	}
	listen(t, g.url+"/mcp")
	if total, by := stats(); total != 1 || by["secretive"] != 1 || by["hostile"] != 0 {
		t.Errorf("an aggregate listen: %d in all, %v by server; want 1, secretive 1, hostile 0", total, by)
	}
	listen(t, g.url+"/secretive/mcp")
	if total, by := stats(); total != 2 || by["secretive"] != 2 {
		t.Errorf("and a scoped one: %d in all, %v by server; want 2, secretive 2", total, by)
	}
}
