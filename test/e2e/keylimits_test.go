package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// limitsConfig serves two echo upstreams: github (alias gh, id github-id)
// and slack.
func limitsConfig(github, slack string) string {
	return fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  github:
    url: %s
    alias: gh
    server_id: github-id
  slack:
    url: %s
`, testKey, github, slack)
}

// callAsHdr makes one modern tools/call of tool with key.
func callAsHdr(t *testing.T, gw, key, tool string) (int, http.Header, map[string]any) {
	t.Helper()
	return rpc(t, gw+"/mcp", modernAs(key, "tools/call", tool), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},`+modernMeta+`}}`)
}

// limitRefusal checks a refusal over a limit: 429, the limit's JSON-RPC
// error (modern) or REST body with want as its message, Retry-After within
// the minute and LiteLLM's x-ratelimit-* headers of kind with limit, and no
// trace of the key in the answer. It returns Retry-After.
func limitRefusal(t *testing.T, status int, hdr http.Header, body map[string]any, kind string, limit int, want, key string) int {
	t.Helper()
	msg := errMessage(body)
	if m, ok := body["message"].(string); ok { // REST
		msg = m
	}
	if status != http.StatusTooManyRequests || msg != want {
		t.Fatalf("over the limit: %d %v, want 429 %q", status, body, want)
	}
	retryAfter(t, hdr)
	if got := hdr.Get("x-ratelimit-limit-" + kind); got != strconv.Itoa(limit) {
		t.Fatalf("x-ratelimit-limit-%s %q, want %d", kind, got, limit)
	}
	if got := hdr.Get("x-ratelimit-remaining-" + kind); got != "0" {
		t.Fatalf("x-ratelimit-remaining-%s %q, want 0", kind, got)
	}
	if got, ra := hdr.Get("x-ratelimit-reset-"+kind), hdr.Get("Retry-After"); got != ra {
		t.Fatalf("x-ratelimit-reset-%s %q, want Retry-After's %q", kind, got, ra)
	}
	sum := sha256.Sum256([]byte(key))
	if b, _ := json.Marshal(body); strings.Contains(string(b), key) || strings.Contains(string(b), hex.EncodeToString(sum[:])) {
		t.Fatalf("the refusal names the key: %s", b)
	}
	n, _ := strconv.Atoi(hdr.Get("Retry-After"))
	return n
}

// A store key's and its team's rpm_limit and mcp_rpm_limit hold for its tool
// calls: the key's own value wins over its team's, a team's keys share its
// counter, mcp_rpm_limit names servers by name, alias or id and holds for
// that server only; over a limit the call never reaches the upstream and is
// answered 429 with Retry-After and x-ratelimit-* headers (modern, REST,
// legacy POST), while listings are never limited.
func TestKeyAndTeamLimitsOnToolCalls(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storeBackend) {
		github, slack := echoUpstream(t), echoUpstream(t)
		gw := startGatewayWithStore(t, st, limitsConfig(github.URL(), slack.URL()))
		for _, team := range []string{`{"team_id":"shared","rpm_limit":2}`, `{"team_id":"own","rpm_limit":1,"mcp_rpm_limit":{"github":1}}`} {
			if status, m := manage(t, http.MethodPost, gw+"/team/new", testKey, team); status != 200 {
				t.Fatalf("/team/new = %d %v", status, m)
			}
		}

		t.Run("a team's keys share its rpm_limit", func(t *testing.T) {
			a := generateKey(t, gw, `{"team_id":"shared"}`)
			b := generateKey(t, gw, `{"team_id":"shared"}`)
			for i, k := range []string{a, b} {
				if status, _, body := callAsHdr(t, gw, k, "slack-echo"); status != 200 || body["result"] == nil {
					t.Fatalf("call %d within the team's limit: %d %v", i+1, status, body)
				}
			}
			status, hdr, body := callAsHdr(t, gw, a, "github-echo")
			limitRefusal(t, status, hdr, body, "requests", 2, `request limit reached for team "shared" (rpm_limit 2 per minute)`, a)
			// REST is the same limit.
			status, hdr, body = rpc(t, gw+"/mcp-rest/tools/call", map[string]string{"Authorization": "Bearer " + b}, `{"server_id":"slack","name":"echo","arguments":{}}`)
			limitRefusal(t, status, hdr, body, "requests", 2, `request limit reached for team "shared" (rpm_limit 2 per minute)`, b)
			// Listings are not limited.
			if status, body := listAs(t, gw, a); status != 200 || len(toolsOf(body)) != 2 {
				t.Fatalf("tools/list at the limit: %d %v", status, body)
			}
		})

		t.Run("the key's own rpm_limit wins over its team's", func(t *testing.T) {
			k := generateKey(t, gw, `{"team_id":"own","rpm_limit":3}`)
			for i := range 3 {
				if status, _, body := callAsHdr(t, gw, k, "slack-echo"); status != 200 || body["result"] == nil {
					t.Fatalf("call %d within the key's limit (over the team's): %d %v", i+1, status, body)
				}
			}
			status, hdr, body := callAsHdr(t, gw, k, "slack-echo")
			limitRefusal(t, status, hdr, body, "requests", 3, "request limit reached for this key (rpm_limit 3 per minute)", k)
		})

		t.Run("mcp_rpm_limit by name, alias and id", func(t *testing.T) {
			for _, ref := range []string{"github", "gh", "github-id"} {
				k := generateKey(t, gw, `{"mcp_rpm_limit":{"`+ref+`":1}}`)
				if status, _, body := callAsHdr(t, gw, k, "github-echo"); status != 200 || body["result"] == nil {
					t.Fatalf("%s: first call: %d %v", ref, status, body)
				}
				status, hdr, body := callAsHdr(t, gw, k, "github-echo")
				limitRefusal(t, status, hdr, body, "requests", 1, "request limit reached for this key on server github (mcp_rpm_limit 1 per minute)", k)
				if status, _, body := callAsHdr(t, gw, k, "slack-echo"); status != 200 || body["result"] == nil {
					t.Fatalf("%s: another server is not limited: %d %v", ref, status, body)
				}
			}
		})

		t.Run("the team's mcp_rpm_limit, on a legacy session", func(t *testing.T) {
			k := generateKey(t, gw, `{"team_id":"own","rpm_limit":10}`) // its own rpm_limit, the team's mcp_rpm_limit
			sid := initLegacy(t, gw+"/mcp", k)
			call := func() (int, http.Header, map[string]any) {
				return rpc(t, gw+"/mcp", legacyHeaders(k, sid), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"github-echo","arguments":{}}}`)
			}
			if status, _, body := call(); status != 200 || body["result"] == nil {
				t.Fatalf("first legacy call: %d %v", status, body)
			}
			status, hdr, body := call()
			if errCode(body) != jsonrpc.CodeInternalError {
				t.Fatalf("legacy refusal code %d, want %d", errCode(body), jsonrpc.CodeInternalError)
			}
			limitRefusal(t, status, hdr, body, "requests", 1, `request limit reached for team "own" on server github (mcp_rpm_limit 1 per minute)`, k)
		})

		// Every refused call stayed in the gateway.
		if n := github.Count("tools/call"); n != 3+1 {
			t.Fatalf("github got %d calls, want 4", n)
		}
	})
}

// A refusal's Retry-After is honoured: the same call made once it has
// passed succeeds. (It waits for the minute's window to slide.)
func TestKeyLimitRetryAfterIsHonoured(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a rate window")
	}
	t.Parallel()
	up := echoUpstream(t)
	gw := startGatewayWithStore(t, storeBackends()[0], limitsConfig(up.URL(), echoUpstream(t).URL()))
	k := generateKey(t, gw, `{"rpm_limit":1}`)
	if status, _, body := callAsHdr(t, gw, k, "github-echo"); status != 200 {
		t.Fatalf("first call: %d %v", status, body)
	}
	status, hdr, body := callAsHdr(t, gw, k, "github-echo")
	after := limitRefusal(t, status, hdr, body, "requests", 1, "request limit reached for this key (rpm_limit 1 per minute)", k)
	time.Sleep(time.Duration(after) * time.Second)
	http.DefaultClient.CloseIdleConnections() // the gateway closed them while idle
	if status, _, body := callAsHdr(t, gw, k, "github-echo"); status != 200 || body["result"] == nil {
		t.Fatalf("after Retry-After (%ds): %d %v", after, status, body)
	}
}

// gatedUpstream is an echo upstream whose tools/call waits for release (or
// for the test's end).
func gatedUpstream(t *testing.T) (*fakemcp.Server, func()) {
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	up := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("echo")},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			<-gate
			return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
		}},
	})
	t.Cleanup(release) // runs before the fake closes
	return up, release
}

// waitCount waits until up has received n tools/call requests.
func waitCount(t *testing.T, up *fakemcp.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for up.Count("tools/call") < n {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream got %d calls, want %d", up.Count("tools/call"), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callInBackground makes a modern tools/call with key in a goroutine,
// cancelled by ctx; the returned channel gets its status (0 when it was
// cancelled).
func callInBackground(ctx context.Context, gw, key, tool string) <-chan int {
	done := make(chan int, 1)
	go func() {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + modernMeta + `}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range modernAs(key, "tools/call", tool) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	return done
}

// A server's max_concurrent_requests refuses a call over it at once (429,
// never queued) while its calls are in flight at a slow upstream, and admits
// calls again once they end.
func TestServerMaxConcurrentRequests(t *testing.T) {
	slow, release := gatedUpstream(t)
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  slow:\n    url: %s\n    max_concurrent_requests: 2\n", testKey, slow.URL()), nil)
	ctx := context.Background()
	first, second := callInBackground(ctx, gw.url, testKey, "slow-echo"), callInBackground(ctx, gw.url, testKey, "slow-echo")
	waitCount(t, slow, 2)
	start := time.Now()
	status, hdr, body := callAsHdr(t, gw.url, testKey, "slow-echo")
	limitRefusal(t, status, hdr, body, "max_parallel_requests", 2, "upstream slow: too many requests in flight (max_concurrent_requests 2)", testKey)
	if time.Since(start) > 5*time.Second {
		t.Fatal("the refusal was queued")
	}
	release()
	if a, b := <-first, <-second; a != 200 || b != 200 {
		t.Fatalf("the calls in flight: %d %d", a, b)
	}
	if status, _, body := callAsHdr(t, gw.url, testKey, "slow-echo"); status != 200 {
		t.Fatalf("after the calls ended: %d %v", status, body)
	}
	if n := slow.Count("tools/call"); n != 3 {
		t.Fatalf("the upstream got %d calls, want 3", n)
	}
}

// A key's max_parallel_requests holds its calls in flight (another key is
// not held), and a call the caller abandons gives its place back.
func TestKeyMaxParallelRequests(t *testing.T) {
	slow, release := gatedUpstream(t)
	gw := startGatewayWithStore(t, storeBackends()[0], fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  slow:\n    url: %s\n", testKey, slow.URL()))
	k := generateKey(t, gw, `{"max_parallel_requests":1}`)
	other := generateKey(t, gw, `{"max_parallel_requests":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	abandoned := callInBackground(ctx, gw, k, "slow-echo")
	waitCount(t, slow, 1)
	status, hdr, body := callAsHdr(t, gw, k, "slow-echo")
	limitRefusal(t, status, hdr, body, "max_parallel_requests", 1, "parallel request limit reached for this key (max_parallel_requests 1)", k)
	otherDone := callInBackground(context.Background(), gw, other, "slow-echo")
	waitCount(t, slow, 2)

	cancel() // the caller gives up: its place is given back
	<-abandoned
	next := admittedEventually(t, slow, 3, func() <-chan int { return callInBackground(context.Background(), gw, k, "slow-echo") })
	release()
	if a, b := <-next, <-otherDone; a != 200 || b != 200 {
		t.Fatalf("the calls in flight: %d %d", a, b)
	}
}

// admittedEventually starts calls until one reaches up as its n-th tools/call
// (the ones before it refused with 429), and returns that call's status.
func admittedEventually(t *testing.T, up *fakemcp.Server, n int, start func() <-chan int) <-chan int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ch := start()
		for {
			if up.Count("tools/call") >= n {
				return ch
			}
			select {
			case s := <-ch:
				if s != http.StatusTooManyRequests {
					t.Fatalf("a call while the place was being given back: %d", s)
				}
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the abandoned call's place was never given back")
	return nil
}
