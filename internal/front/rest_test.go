package front

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

func restGet(t *testing.T, url string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("REST body: %v", err)
	}
	return resp.StatusCode, body
}

// sawToken reports whether any tools/list the fake got carried token in
// Authorization.
func sawToken(f *fakemcp.Server, token string) bool {
	for _, r := range f.Requests(mcp.MethodToolsList) {
		if strings.Contains(r.Header.Get("Authorization"), token) {
			return true
		}
	}
	return false
}

// A caller's own Authorization, meant for one opted-in server, must not be
// sprayed over every opted-in server by an unscoped REST listing.
func TestRESTListSpanningServersForwardsNoCallerAuthorization(t *testing.T) {
	const token = "caller-own-upstream-token"
	fwd := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("echo")}})
	del := fakemcp.New(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("add")}})
	f := newTestFront(t, frontSpec{ups: []upSpec{
		{name: "fwd", fake: fwd, server: gateway.Server{ExtraHeaders: []string{"Authorization"}}},
		{name: "del", fake: del, server: gateway.Server{Delegate: true}, auth: auth.PolicyConfig{AuthType: auth.AuthOAuthDelegate}},
	}})
	hdr := map[string]string{"x-litellm-api-key": testKey, "Authorization": "Bearer " + token}

	status, body := restGet(t, f.url+"/mcp-rest/tools/list", hdr)
	if status != http.StatusOK {
		t.Fatalf("unscoped listing: %d %v", status, body)
	}
	if sawToken(fwd, token) || sawToken(del, token) {
		t.Fatalf("an unscoped listing forwarded the caller's Authorization (fwd %v, del %v)", sawToken(fwd, token), sawToken(del, token))
	}
	if fwd.Count(mcp.MethodToolsList) == 0 {
		t.Fatalf("the unscoped listing did not reach fwd: %v", body)
	}

	for _, up := range []struct {
		name string
		fake *fakemcp.Server
	}{{"fwd", fwd}, {"del", del}} {
		status, body := restGet(t, f.url+"/mcp-rest/tools/list?server_id="+up.name, hdr)
		if status != http.StatusOK {
			t.Fatalf("server_id=%s: %d %v", up.name, status, body)
		}
		if !sawToken(up.fake, token) {
			t.Errorf("server_id=%s: the one server in scope did not get the caller's Authorization", up.name)
		}
	}
}

// The per-server listings run concurrently, and the answer keeps config
// order and its shape.
func TestRESTListFansOutInOrder(t *testing.T) {
	const n = 3
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var ups []upSpec
	for i, name := range []string{"c", "a", "b"} {
		once := sync.Once{}
		tool := string(rune('x' + i))
		fake := fakemcp.New(t, fakemcp.Opts{Handlers: map[string]fakemcp.Handler{
			mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				once.Do(arrived.Done)
				select {
				case <-all: // every server is being listed at once
				case <-time.After(5 * time.Second):
					return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "listed one at a time")
				}
				return json.RawMessage(`{"resultType":"complete","tools":[{"name":"` + tool + `","inputSchema":{"type":"object"}}]}`), nil
			},
		}})
		ups = append(ups, upSpec{name: name, fake: fake})
	}
	f := newTestFront(t, frontSpec{ups: ups})
	start := time.Now()
	status, body := restGet(t, f.url+"/mcp-rest/tools/list", map[string]string{"Authorization": "Bearer " + testKey})
	if status != http.StatusOK {
		t.Fatalf("%d %v", status, body)
	}
	tools, _ := body["tools"].([]any)
	var got []string
	for _, tl := range tools {
		m := tl.(map[string]any)
		got = append(got, m["name"].(string)+"@"+m["mcp_info"].(map[string]any)["server_name"].(string))
	}
	if strings.Join(got, ",") != "x@c,y@a,z@b" {
		t.Fatalf("tools = %v (after %v), want x@c,y@a,z@b: config order, all servers listed concurrently; body %v", got, time.Since(start), body)
	}
	if body["message"] != "Successfully retrieved tools" || body["error"] != nil {
		t.Fatalf("shape changed: %v", body)
	}
}

// restPost calls POST /mcp-rest/tools/call and returns the status, the
// WWW-Authenticate header and the body.
func restPost(t *testing.T, url, body string) (int, string, map[string]any) {
	t.Helper()
	resp, b := post(t, url+"/mcp-rest/tools/call", map[string]string{"Authorization": "Bearer " + testKey}, body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("REST body %q: %v", b, err)
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), m
}

// A REST call's failure is answered with the status of its fault class
// (timeout 504, unreachable and upstream errors 502, refusals 401/403 with
// the upstream's challenge, rate limits and overload as the upstream said),
// and never with the upstream's body.
func TestRESTCallStatusFollowsTheFaultClass(t *testing.T) {
	const secret = "SECRET-UPSTREAM-BODY"
	tools := map[string][]json.RawMessage{mcp.MethodToolsList: fakemcp.Tools("t")}
	slow := fakemcp.New(t, fakemcp.Opts{Lists: tools, Delay: map[string]time.Duration{mcp.MethodToolsCall: 5 * time.Second}})
	gone := fakemcp.New(t, fakemcp.Opts{Lists: tools})
	rpcErr := fakemcp.New(t, fakemcp.Opts{Lists: tools, Handlers: map[string]fakemcp.Handler{
		mcp.MethodToolsCall: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: "upstream says no"}
		},
	}})
	ups := []upSpec{
		{name: "slow", fake: slow, timeout: 300 * time.Millisecond},
		{name: "gone", fake: gone},
		{name: "rpc", fake: rpcErr},
	}
	for _, st := range []struct {
		name   string
		status int
	}{{"broken", 500}, {"unauth", 401}, {"forbidden", 403}, {"limited", 429}, {"busy", 503}} {
		ups = append(ups, upSpec{name: st.name, fake: fakemcp.New(t, fakemcp.Opts{Status: st.status, Challenge: "Bearer realm=\"" + st.name + "\"", Body: secret})})
	}
	f := newTestFront(t, frontSpec{ups: ups})
	gone.Close()
	for _, tc := range []struct {
		server    string
		status    int
		challenge bool
	}{
		{"slow", http.StatusGatewayTimeout, false},
		{"gone", http.StatusBadGateway, false},
		{"rpc", http.StatusBadGateway, false},
		{"broken", http.StatusBadGateway, false},
		{"unauth", http.StatusUnauthorized, true},
		{"forbidden", http.StatusForbidden, true},
		{"limited", http.StatusTooManyRequests, false},
		{"busy", http.StatusServiceUnavailable, false},
	} {
		t.Run(tc.server, func(t *testing.T) {
			status, challenge, body := restPost(t, f.url, `{"server_id":"`+tc.server+`","name":"t","arguments":{}}`)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, body)
			}
			if (challenge != "") != tc.challenge {
				t.Fatalf("WWW-Authenticate %q", challenge)
			}
			if strings.Contains(fmt.Sprint(body), secret) || body["message"] == nil {
				t.Fatalf("body %v", body)
			}
		})
	}
}

// A REST listing reports each server's outcome by its fault class, as the
// aggregate's _meta does: a refusal names itself and its status.
func TestRESTListOutcomesFollowTheFaultClass(t *testing.T) {
	var ups []upSpec
	for _, st := range []struct {
		name   string
		status int
	}{{"unauth", 401}, {"forbidden", 403}, {"broken", 500}} {
		ups = append(ups, upSpec{name: st.name, fake: fakemcp.New(t, fakemcp.Opts{Status: st.status})})
	}
	f := newTestFront(t, frontSpec{ups: ups})
	for _, tc := range []struct{ server, want string }{
		{"unauth", `{"status":"auth_required","http_status":401}`},
		{"forbidden", `{"status":"forbidden","http_status":403}`},
		{"broken", `{"status":"upstream_error"}`},
	} {
		status, body := restGet(t, f.url+"/mcp-rest/tools/list?server_id="+tc.server, map[string]string{"Authorization": "Bearer " + testKey})
		got, _ := json.Marshal(body["server_outcomes"].(map[string]any)[tc.server])
		var w any
		_ = json.Unmarshal([]byte(tc.want), &w)
		want, _ := json.Marshal(w)
		if status != http.StatusOK || string(got) != string(want) {
			t.Errorf("%s: %d outcome %s, want %s", tc.server, status, got, tc.want)
		}
	}
}
