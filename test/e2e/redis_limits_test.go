package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/redistest"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
)

// startRedisReplicas starts n gateways for yaml sharing the Redis at redisURL (their limit keys
// under prefix), the Postgres database dbURL when not empty, and one salt key.
func startRedisReplicas(t *testing.T, n int, yaml, redisURL, prefix, dbURL string) []*gatewayUnderTest {
	t.Helper()
	env := map[string]string{"REDIS_URL": redisURL, "LITELLM_SALT_KEY": "redis-replicas-salt-0123456789abcdef"}
	if dbURL != "" {
		env["DATABASE_URL"] = dbURL
	}
	out := make([]*gatewayUnderTest, n)
	for i := range out {
		out[i] = startGatewayWith(t, yaml, env, app.WithRedisPrefix(prefix))
	}
	return out
}

// callResult is one tools/call's answer, as a goroutine may collect it.
type callResult struct {
	status int
	header http.Header
	body   map[string]any
	err    error
}

// modernCallAs posts one modern tools/call of tool with key to gw; it may run in any goroutine.
func modernCallAs(gw, key, tool string) callResult {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + modernMeta + `}}`
	req, _ := http.NewRequest(http.MethodPost, gw+"/mcp", bytes.NewReader([]byte(body)))
	for k, v := range modernAs(key, "tools/call", tool) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return callResult{err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			return callResult{status: resp.StatusCode, err: fmt.Errorf("body %q: %w", raw, err)}
		}
	}
	return callResult{status: resp.StatusCode, header: resp.Header, body: m}
}

// callsAtOnce makes n tool calls at once, call i on replica i mod len(gws), and returns them.
func callsAtOnce(t *testing.T, n int, gws []*gatewayUnderTest, key string, tool func(i int) string) []callResult {
	t.Helper()
	out := make([]callResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = modernCallAs(gws[i%len(gws)].url, key, tool(i))
		}()
	}
	wg.Wait()
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
	}
	return out
}

// admittedOf counts the 200s with a result and checks that every other answer is a 429 refusal
// by want (its message), with Retry-After and LiteLLM's headers.
func admittedOf(t *testing.T, rs []callResult, want string) int {
	t.Helper()
	n := 0
	for _, r := range rs {
		if r.status == http.StatusOK && r.body["result"] != nil {
			n++
			continue
		}
		if r.status != http.StatusTooManyRequests || errMessage(r.body) != want {
			t.Fatalf("neither admitted nor refused by %q: %d %v", want, r.status, r.body)
		}
		retryAfter(t, r.header)
		if r.header.Get("x-ratelimit-remaining-requests") != "0" || r.header.Get("x-ratelimit-reset-requests") != r.header.Get("Retry-After") {
			t.Fatalf("refusal headers: %v", r.header)
		}
	}
	return n
}

// TestRedisSharedServerRPMAcrossReplicas: a server's rpm: 10 holds for three replicas together
// through Redis: 30 calls at once, spread over the replicas, admit exactly 10 (the upstream
// sees 10) and refuse 20 with 429, Retry-After and x-ratelimit-* headers; each admitted call
// carries x-ratelimit-limit-requests 10 and what was left, every count from 0 to 9 once.
func TestRedisSharedServerRPMAcrossReplicas(t *testing.T) {
	up := echoUpstream(t)
	gws := startRedisReplicas(t, 3, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  limited:\n    url: %s\n    rpm: 10\n",
		testKey, up.URL()), redistest.URL(t), redistest.Prefix(t), "")
	rs := callsAtOnce(t, 30, gws, testKey, func(int) string { return "limited-echo" })
	if n := admittedOf(t, rs, "upstream limited: request limit reached (10 per minute)"); n != 10 {
		t.Fatalf("%d calls admitted across 3 replicas, want exactly 10", n)
	}
	if n := up.Count("tools/call"); n != 10 {
		t.Fatalf("the upstream got %d calls, want 10", n)
	}
	left := map[string]bool{}
	for _, r := range rs {
		if r.status == http.StatusOK {
			if r.header.Get("x-ratelimit-limit-requests") != "10" {
				t.Fatalf("admitted call's headers: %v", r.header)
			}
			left[r.header.Get("x-ratelimit-remaining-requests")] = true
		}
	}
	for i := range 10 {
		if !left[strconv.Itoa(i)] {
			t.Fatalf("remaining counts %v, want each of 0..9 once", left)
		}
	}
}

// TestRedisKeyAndTeamLimitsAcrossReplicas: two replicas on one Postgres store and one Redis: a
// team's mcp_rpm_limit is one counter for all its keys on all replicas, and a key's own
// mcp_rpm_limit (which wins over its team's) one for that key on all replicas; a refused call
// reaches no upstream and counts nothing.
func TestRedisKeyAndTeamLimitsAcrossReplicas(t *testing.T) {
	github, slack := echoUpstream(t), echoUpstream(t)
	gws := startRedisReplicas(t, 2, limitsConfig(github.URL(), slack.URL()), redistest.URL(t), redistest.Prefix(t), pgtest.NewDatabase(t))
	if status, m := manage(t, http.MethodPost, gws[0].url+"/team/new", testKey, `{"team_id":"t","mcp_rpm_limit":{"github":3}}`); status != 200 {
		t.Fatalf("/team/new = %d %v", status, m)
	}
	k1 := generateKey(t, gws[0].url, `{"team_id":"t"}`)
	k2 := generateKey(t, gws[1].url, `{"team_id":"t"}`)
	own := generateKey(t, gws[0].url, `{"team_id":"t","mcp_rpm_limit":{"gh":2}}`)

	var rs []callResult
	for i := range 8 { // alternate keys and replicas
		key := []string{k1, k2}[i%2]
		rs = append(rs, callsAtOnce(t, 1, gws[i%2:i%2+1], key, func(int) string { return "github-echo" })...)
	}
	if n := admittedOf(t, rs, `request limit reached for team "t" on server github (mcp_rpm_limit 3 per minute)`); n != 3 {
		t.Fatalf("%d calls of the team's keys admitted across replicas, want 3", n)
	}
	rs = callsAtOnce(t, 6, gws, own, func(int) string { return "github-echo" })
	if n := admittedOf(t, rs, "request limit reached for this key on server github (mcp_rpm_limit 2 per minute)"); n != 2 {
		t.Fatalf("%d calls of the key with its own limit admitted, want 2", n)
	}
	// The team's limit is for github only.
	if r := modernCallAs(gws[1].url, k1, "slack-echo"); r.status != 200 || r.body["result"] == nil {
		t.Fatalf("another server: %d %v", r.status, r.body)
	}
	if n := github.Count("tools/call"); n != 5 {
		t.Fatalf("github got %d calls, want 5", n)
	}
}

// TestRedisOutageFallsBackAndRecovers: two replicas share a Redis that is stopped while calls
// run. With redis_failure_mode open, no call fails (each replica counts alone, readiness says
// so, one WARN per outage); a replica with closed refuses calls a limit applies to with 503
// and Retry-After and serves calls no limit applies to. Once Redis is back (empty), the limit
// is shared again without a restart: exactly rpm calls admitted between the replicas.
func TestRedisOutageFallsBackAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	up, free, tight := echoUpstream(t), echoUpstream(t), echoUpstream(t)
	cfg := func(mode string) string {
		return fmt.Sprintf("general_settings:\n  master_key: %s\n  redis_failure_mode: %s\nmcp_servers:\n  limited:\n    url: %s\n    rpm: 1000000\n  free:\n    url: %s\n  tight:\n    url: %s\n    rpm: 4\n",
			testKey, mode, up.URL(), free.URL(), tight.URL())
	}
	prefix := redistest.Prefix(t)
	open := startRedisReplicas(t, 2, cfg("open"), srv.URL(), prefix, "")
	closed := startRedisReplicas(t, 1, cfg("closed"), srv.URL(), prefix, "")[0]

	// Load on both open replicas while Redis goes away and comes back.
	stop := make(chan struct{})
	var calls, failed atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := modernCallAs(open[w%2].url, testKey, "limited-echo")
				calls.Add(1)
				if r.err != nil || r.status != 200 || r.body["result"] == nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%d %v %v", r.status, r.body, r.err))
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	srv.Stop()
	time.Sleep(700 * time.Millisecond)

	// While down: closed refuses limited calls, serves unlimited ones; readiness reports it.
	r := modernCallAs(closed.url, testKey, "limited-echo")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(errMessage(r.body), "cannot be checked") {
		t.Fatalf("fail closed with Redis down: %d %v %v", r.status, r.header, r.body)
	}
	if r := modernCallAs(closed.url, testKey, "free-echo"); r.status != 200 || r.body["result"] == nil {
		t.Fatalf("a call no limit applies to, with Redis down and failing closed: %d %v", r.status, r.body)
	}
	status, body := readiness(t, open[0].url)
	if status != 200 || !strings.Contains(body, "unreachable") || !strings.Contains(body, "decided without redis") {
		t.Fatalf("readiness with Redis down: %d %s", status, body)
	}
	_, fams := scrape(t, open[0].url, testKey)
	if up, without := sum(fams, "mcpgw_redis_up", nil), sum(fams, "mcpgw_limits_without_redis_total", nil); up != 0 || without < 1 {
		t.Fatalf("metrics with Redis down: mcpgw_redis_up %v, mcpgw_limits_without_redis_total %v", up, without)
	}

	srv.Restart()
	time.Sleep(1500 * time.Millisecond) // the fallback tries Redis again every second
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of %d calls failed around the outage (open), first: %v", n, calls.Load(), firstFailure.Load())
	}
	if calls.Load() < 20 {
		t.Fatalf("only %d calls made during the outage", calls.Load())
	}
	status, body = readiness(t, open[1].url)
	if status != 200 || !strings.Contains(body, `"redis":"ok"`) {
		t.Fatalf("readiness after the restart: %d %s", status, body)
	}
	_, fams = scrape(t, open[1].url, testKey)
	if up, outages := sum(fams, "mcpgw_redis_up", nil), sum(fams, "mcpgw_redis_outages_total", nil); up != 1 || outages != 1 {
		t.Fatalf("metrics after the restart: mcpgw_redis_up %v, mcpgw_redis_outages_total %v, want 1 and 1", up, outages)
	}

	// The replica failing closed tries Redis again (one call per second while it is down) and
	// admits again.
	if r := modernCallAs(closed.url, testKey, "limited-echo"); r.status != 200 {
		t.Fatalf("fail closed after the restart: %d %v", r.status, r.body)
	}
	// Shared again, on the same replicas: tight's rpm 4 holds for all three together.
	rs := callsAtOnce(t, 12, append(open, closed), testKey, func(int) string { return "tight-echo" })
	if n := admittedOf(t, rs, "upstream tight: request limit reached (4 per minute)"); n != 4 {
		t.Fatalf("%d admitted across the replicas after the restart, want 4", n)
	}
}

// readiness returns /health/readiness's status and body.
func readiness(t *testing.T, gw string) (int, string) {
	t.Helper()
	resp, err := http.Get(gw + "/health/readiness")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAdmittedCallsCarryRateLimitHeaders: an admitted tools/call's answer carries what its
// tightest limits have left, on REST and a legacy session's POST as on modern (without Redis
// too); a call no limit applies to carries none.
func TestAdmittedCallsCarryRateLimitHeaders(t *testing.T) {
	limited, free := echoUpstream(t), echoUpstream(t)
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  limited:\n    url: %s\n    rpm: 5\n    max_concurrent_requests: 3\n  free:\n    url: %s\n",
		testKey, limited.URL(), free.URL()), nil)
	check := func(what string, hdr http.Header, remaining string) {
		t.Helper()
		if hdr.Get("x-ratelimit-limit-requests") != "5" || hdr.Get("x-ratelimit-remaining-requests") != remaining ||
			hdr.Get("x-ratelimit-reset-requests") == "" || hdr.Get("x-ratelimit-limit-max_parallel_requests") != "3" ||
			hdr.Get("x-ratelimit-remaining-max_parallel_requests") != "2" {
			t.Fatalf("%s: headers %v, want 5 per minute with %s left and 2 of 3 places free", what, hdr, remaining)
		}
	}
	status, hdr, body := rpc(t, gw.url+"/mcp-rest/tools/call", map[string]string{"Authorization": "Bearer " + testKey}, `{"server_id":"limited","name":"echo","arguments":{}}`)
	if status != 200 || body == nil {
		t.Fatalf("REST call: %d %v", status, body)
	}
	check("REST", hdr, "4")
	sid := initLegacy(t, gw.url+"/mcp", testKey)
	status, hdr, body = rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"limited-echo","arguments":{}}}`)
	if status != 200 || body["result"] == nil {
		t.Fatalf("legacy call: %d %v", status, body)
	}
	check("legacy POST", hdr, "3")
	status, hdr, _ = rpc(t, gw.url+"/mcp", legacyHeaders(testKey, sid), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"free-echo","arguments":{}}}`)
	if status != 200 || hdr.Get("x-ratelimit-limit-requests") != "" || hdr.Get("x-ratelimit-limit-max_parallel_requests") != "" {
		t.Fatalf("a call no limit applies to: %d %v", status, hdr)
	}
}
