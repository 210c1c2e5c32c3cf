package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// deadURL is an MCP URL nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr + "/mcp"
}

// TestMetricsReadTheGatewayState: the gauges read when scraped follow what
// the gateway holds: a legacy session with its GET stream and an /mcp/sse
// stream are counted as held, an unreachable server's listing breaker is
// open while a healthy one's is closed, and a list the upstream lets the
// gateway cache is a miss, then a hit.
func TestMetricsReadTheGatewayState(t *testing.T) {
	cached := fakemcp.New(t, fakemcp.Opts{TTLMs: fakemcp.TTL(60_000),
		Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("echo")}})
	yaml := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  cached:\n    url: %s\n  dead:\n    url: %s\n",
		testKey, cached.URL(), deadURL(t))
	gw := startGatewayWith(t, yaml, nil).url

	_, fams := scrape(t, gw, testKey)
	if got := sum(fams, "mcpgw_streams_held", nil); got != 0 {
		t.Fatalf("streams held before any = %v", got)
	}
	sid := initLegacy(t, gw+"/mcp", testKey)
	openGETStream(t, gw+"/mcp", sid)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
	sse, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: gw + "/mcp/sse", HTTPClient: &http.Client{Transport: authTransport{testKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	for i := range 2 {
		if _, err := sse.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d: %v", i, err)
		}
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		_, fams = scrape(t, gw, testKey)
		checks := []struct {
			name    string
			labels  map[string]string
			want    float64
			atLeast bool
		}{
			{"mcpgw_streams_held", map[string]string{"kind": "get"}, 1, false},
			{"mcpgw_streams_held", map[string]string{"kind": "sse"}, 1, false},
			{"mcpgw_legacy_sessions_open", nil, 1, false},
			{"mcpgw_breaker_state", map[string]string{"server": "dead", "state": "open"}, 1, false},
			{"mcpgw_breaker_state", map[string]string{"server": "dead", "state": "closed"}, 0, false},
			{"mcpgw_breaker_state", map[string]string{"server": "cached", "state": "closed"}, 1, false},
			{"mcpgw_breaker_state", map[string]string{"server": "cached", "state": "open"}, 0, false},
			{"mcpgw_list_cache_requests_total", map[string]string{"result": "hit"}, 1, true},
			{"mcpgw_list_cache_requests_total", map[string]string{"result": "miss"}, 1, true},
		}
		var bad []string
		for _, c := range checks {
			if got := sum(fams, c.name, c.labels); got != c.want && (!c.atLeast || got < c.want) {
				bad = append(bad, fmt.Sprintf("%s%v = %v, want %v", c.name, c.labels, got, c.want))
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a legacy session with its GET stream, an /mcp/sse stream and two listings:\n%v", bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
