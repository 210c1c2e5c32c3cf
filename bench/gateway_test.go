// Package bench holds the gateway benchmarks: bench/run.sh (the table in
// docs/benchmarks.md) and, here, an in-process tools/call benchmark to
// profile the gateway's own work, which the mcpgw binary has no pprof
// endpoint for.
//
//	MCPGW_REQUIRE_PEERS=1 go test -run='^$' -bench=. -benchmem -cpuprofile=/tmp/gw.cpu ./bench
//	go tool pprof -top -focus='front\.' bench.test /tmp/gw.cpu
//
// The gateway is built by internal/app, as `mcpgw serve` builds it, from a
// config with the master key and one HTTP upstream (default advertised
// revisions), and served on a loopback httptest server; the upstream is the
// go-sdk fixture in its own process. The "direct" sub-benchmark runs the same client against the
// fixture, so the difference between the two is the gateway's hop: its
// time, and (in this process) its bytes and allocations.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/app/apptest"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/testpeers"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

const (
	benchKey  = "sk-bench-master-key-0123456789"
	benchSalt = "6d6370677720626e6368206b657920666f722062656e63686d61726b73206f6e6c79"
	simple    = "This is a simple text response for testing."
)

// countingClient is a pooled HTTP client (the upstream client's default
// settings) that counts the connections it dials.
func countingClient(dials *atomic.Int64) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.MaxIdleConns = 64, 256
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: tr}
}

// upstreamClient is the upstream client's default HTTP client (upstream.NewHTTPClient) with its
// connections counted in dials.
func upstreamClient(dials *atomic.Int64) *http.Client {
	return upstream.NewHTTPClient(countingClient(dials).Transport.(*http.Transport))
}

// startGateway serves a gateway with n upstreams, fx (n = 1) or s1…sn, all
// at upstreamURL; the gateway's upstream connections are counted in upDials.
func startGateway(tb testing.TB, upstreamURL string, n int, upDials *atomic.Int64) string {
	tb.Helper()
	return startGatewayWith(tb, upstreamURL, n, upDials, "")
}

// startGatewayWith is startGateway with more general_settings lines (each
// "  key: value\n").
func startGatewayWith(tb testing.TB, upstreamURL string, n int, upDials *atomic.Int64, general string) string {
	tb.Helper()
	return startGatewayStore(tb, upstreamURL, n, upDials, general, true)
}

// startGatewayStore is startGatewayWith with or without a data dir: without one the gateway
// has no store (no store keys, no spend log, no budgets), the bare path the control plane's
// cost is measured against.
func startGatewayStore(tb testing.TB, upstreamURL string, n int, upDials *atomic.Int64, general string, withStore bool) string {
	tb.Helper()
	var yaml strings.Builder
	yaml.WriteString("general_settings:\n  master_key: " + benchKey + "\n" + general + "mcp_servers:\n")
	for i := 1; i <= n; i++ {
		name := "fx"
		if n > 1 {
			name = "s" + strconv.Itoa(i)
		}
		yaml.WriteString("  " + name + ":\n    url: " + upstreamURL + "\n")
	}
	env := map[string]string{seal.SaltKeyEnv: benchSalt}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, problems, err := config.Parse([]byte(yaml.String()), app.ConfigOptions(lookup))
	if err != nil {
		tb.Fatalf("config: %v %v", err, problems)
	}
	opts := []app.Option{app.WithLookupEnv(lookup), app.WithVersion("bench"),
		app.WithUpstreamHTTPClient(upstreamClient(upDials))}
	if withStore {
		opts = append(opts, app.WithDataDir(tb.TempDir()))
	}
	return serveApp(tb, cfg, opts...)
}

// modernCall is one 2026-07-28 tools/call, as bench/loadgen sends it.
func modernCall(tool string) ([]byte, http.Header) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", tool)
	return body, h
}

func post(client *http.Client, url string, body []byte, h http.Header, buf *bytes.Buffer) error {
	return postExpect(client, url, body, h, buf, simple)
}

func postExpect(client *http.Client, url string, body []byte, h http.Header, buf *bytes.Buffer, expect string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = h.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(buf.String(), expect) {
		return &answerError{resp.StatusCode, buf.String()}
	}
	return nil
}

type answerError struct {
	status int
	body   string
}

func (e *answerError) Error() string {
	return http.StatusText(e.status) + ": " + e.body
}

// storeKey mints a key in the gateway's store (/key/generate with the master key) limited to
// server fx.
func storeKey(tb testing.TB, gwURL string) string {
	tb.Helper()
	return manage(tb, gwURL, "/key/generate", `{"key_alias":"bench","object_permission":{"mcp_servers":["fx"]}}`)
}

// leveledStoreKey mints a key limited to server fx that belongs to a team, a user and an
// organisation, each granting fx too, so authenticating it resolves (and intersects) all four
// levels.
func leveledStoreKey(tb testing.TB, gwURL string) string {
	tb.Helper()
	const fx = `"object_permission":{"mcp_servers":["fx"]}`
	manage(tb, gwURL, "/organization/new", `{"organization_id":"bo","organization_alias":"bench-org",`+fx+`}`)
	manage(tb, gwURL, "/team/new", `{"team_id":"bt","organization_id":"bo",`+fx+`}`)
	manage(tb, gwURL, "/user/new", `{"user_id":"bu","user_role":"internal_user",`+fx+`}`)
	return manage(tb, gwURL, "/key/generate", `{"key_alias":"bench-leveled","team_id":"bt","user_id":"bu",`+fx+`}`)
}

// manage POSTs body to a management route with the master key and returns the answer's "key"
// (the new secret, for /key/generate), failing on anything but 200.
func manage(tb testing.TB, gwURL, path, body string) string {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(gwURL, "/mcp")+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Key string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s = %d %v", path, resp.StatusCode, err)
	}
	return out.Key
}

// BenchmarkToolsCall: one modern tools/call at a time, direct to the
// stateless fixture and through the in-process gateway, authenticated by the
// master key, by a store key (its lookup cached for a second) and by a store key of a team, a
// user and an organisation (four cached lookups, four levels intersected); gateway-nostore is
// a gateway without a store (no spend log, no budgets), so gateway minus gateway-nostore is
// what the store's control plane costs a call.
func BenchmarkToolsCall(b *testing.B) {
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	var upDials, clientDials atomic.Int64
	gwURL := startGateway(b, fixture, 1, &upDials)
	bareURL := startGatewayStore(b, fixture, 1, &upDials, "", false)
	client := countingClient(&clientDials)
	for _, tc := range []struct {
		name, url, tool, key string
	}{
		{"direct", fixture, "test_simple_text", ""},
		{"gateway-nostore", bareURL, "fx-test_simple_text", benchKey},
		{"gateway", gwURL, "fx-test_simple_text", benchKey},
		{"gateway-store-key", gwURL, "fx-test_simple_text", storeKey(b, gwURL)},
		{"gateway-store-key-team-user-org", gwURL, "fx-test_simple_text", leveledStoreKey(b, gwURL)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body, h := modernCall(tc.tool)
			if tc.key != "" {
				h.Set("Authorization", "Bearer "+tc.key)
			}
			var buf bytes.Buffer
			if err := post(client, tc.url, body, h, &buf); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			up0, cl0, cpu0 := upDials.Load(), clientDials.Load(), processCPU()
			n := 0
			for b.Loop() {
				if err := post(client, tc.url, body, h, &buf); err != nil {
					b.Fatal(err)
				}
				n++
			}
			// CPU time of this process per call: the client's, plus the gateway's when the call
			// goes through it (the fixture runs in its own process). gateway minus direct is the
			// gateway's own CPU per call.
			if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(n), "cpu-µs/op")
			}
			// Connections dialed per call: ~0 when keep-alive works on both hops.
			b.ReportMetric(float64(upDials.Load()-up0)/float64(n), "upstream-dials/op")
			b.ReportMetric(float64(clientDials.Load()-cl0)/float64(n), "client-dials/op")
		})
	}
}

// BenchmarkToolsList: one modern tools/list (first page) through the
// in-process gateway with 10 configured upstreams on one fixture process.
// Nothing is cached (the fixture answers ttlMs 0), so every listing fans out.
func BenchmarkToolsList(b *testing.B) {
	fixture := testpeers.StartGoFixtureHTTP(b, true)
	var upDials, clientDials atomic.Int64
	const n = 10
	gwURL := startGateway(b, fixture, n, &upDials)
	client := countingClient(&clientDials)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}`)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/list")
	h.Set("Authorization", "Bearer "+benchKey)
	var buf bytes.Buffer
	last := `"s` + strconv.Itoa(n) + `-test_simple_text"`
	if err := postExpect(client, gwURL, body, h, &buf, last); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	up0, cpu0 := upDials.Load(), processCPU()
	calls := 0
	for b.Loop() {
		if err := postExpect(client, gwURL, body, h, &buf, last); err != nil {
			b.Fatal(err)
		}
		calls++
	}
	b.ReportMetric(float64(upDials.Load()-up0)/float64(calls), "upstream-dials/op")
	// This process's CPU (client and gateway) per upstream page: the figure of
	// "CPU per upstream page" (one listing fans out to n upstreams).
	if cpu1 := processCPU(); cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(calls*n), "cpu-µs/upstream-page")
	}
}

// serveApp builds the gateway for cfg with opts, serves it over HTTP until the benchmark
// ends (with the server serve uses, or net/http's with MCPGW_HTTP_SERVER=stdlib), and
// returns its /mcp URL.
func serveApp(tb testing.TB, cfg *config.Config, opts ...app.Option) string {
	tb.Helper()
	a, err := app.New(cfg, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	url, _ := apptest.Serve(tb, a, cfg.General.HTTP.MaxConnections)
	return url + "/mcp"
}
