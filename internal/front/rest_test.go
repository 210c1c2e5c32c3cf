package front

import (
	"encoding/json"
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
