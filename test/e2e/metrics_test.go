package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// scrape GETs /metrics with key ("" for none) and returns the status and
// the parsed families (nil unless 200).
func scrape(t *testing.T, gw, key string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw+"/metrics", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return resp.StatusCode, fams
}

// sum adds the values (counter value, or histogram sample count) of the
// family's series whose labels include want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

func hashOf(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// metricsWorkload is the scripted workload: tool calls on every transport
// and era to a real go-sdk upstream (fx), by the master key and by a stored
// key with an alias, and one each of three injected faults (an upstream's
// own JSON-RPC error, the gateway's rpm limit, an unknown tool).
func metricsWorkload(t *testing.T, logTo io.Writer) (gw string, aliasKey string) {
	t.Helper()
	fx := testpeers.StartGoFixtureHTTP(t, false)
	bad := fakemcp.New(t, fakemcp.Opts{
		Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("echo")},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return nil, &jsonrpc.Error{Code: -32000, Message: "backend down"}
		}},
	})
	lim := echoUpstream(t)
	yaml := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  fx:\n    url: %s\n  bad:\n    url: %s\n  lim:\n    url: %s\n    rpm: 1\n",
		testKey, fx, bad.URL(), lim.URL())
	var opts []app.Option
	opts = append(opts, app.WithDataDir(t.TempDir()))
	if logTo != nil {
		opts = append(opts, app.WithLogger(slog.New(slog.NewJSONHandler(logTo, nil))))
	}
	g := startGatewayWith(t, yaml, nil, opts...)
	gw = g.url
	aliasKey = generateKey(t, gw, `{"key_alias":"k-metrics","object_permission":{"mcp_servers":["fx"]}}`)
	u := gw + "/mcp"
	call := func(key, tool string) map[string]any {
		h := modernAs(key, "tools/call", tool)
		_, _, body := rpc(t, u, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"secret_marker":"ARG-MARKER-42"},`+modernMeta+`}}`)
		return body
	}
	for range 3 {
		if body := call(testKey, "fx-test_simple_text"); body["result"] == nil {
			t.Fatalf("modern call: %v", body)
		}
	}
	for range 2 {
		if body := call(aliasKey, "fx-test_simple_text"); body["result"] == nil {
			t.Fatalf("modern call with the stored key: %v", body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := sdkSession(t, u, "2025-11-25")
	for range 2 {
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fx-test_simple_text", Arguments: map[string]any{"secret_marker": "ARG-MARKER-42"}}); err != nil {
			t.Fatal(err)
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "sse", Version: "1"}, nil)
	sse, err := client.Connect(ctx, &sdk.SSEClientTransport{Endpoint: gw + "/mcp/sse", HTTPClient: &http.Client{Transport: authTransport{testKey}}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sse.CallTool(ctx, &sdk.CallToolParams{Name: "fx-test_simple_text", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	_ = sse.Close()
	req, _ := http.NewRequest(http.MethodPost, gw+"/mcp-rest/tools/call", strings.NewReader(`{"server_id":"fx","name":"test_simple_text","arguments":{"secret_marker":"ARG-MARKER-42"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("REST call: %v %v", resp, err)
	}
	resp.Body.Close()
	if body := call(testKey, "bad-echo"); body["error"] == nil {
		t.Fatalf("the failing upstream answered %v", body)
	}
	if body := call(testKey, "lim-echo"); body["result"] == nil {
		t.Fatalf("first limited call: %v", body)
	}
	if body := call(testKey, "lim-echo"); body["error"] == nil {
		t.Fatalf("second limited call was not refused: %v", body)
	}
	if body := call(testKey, "nosuch-tool"); body["error"] == nil {
		t.Fatalf("unknown tool: %v", body)
	}
	return gw, aliasKey
}

// TestMetricsCountTheWorkload: after a scripted workload, an exact scrape
// counts every tool call per tool, server and key in LiteLLM's metric, every
// downstream request of every transport and every upstream request in the
// semantic-convention histograms, and the injected faults by class.
func TestMetricsCountTheWorkload(t *testing.T) {
	gw, aliasKey := metricsWorkload(t, nil)
	if status, _ := scrape(t, gw, ""); status != http.StatusUnauthorized {
		t.Fatalf("/metrics without a key = %d, want 401", status)
	}
	if status, _ := scrape(t, gw, aliasKey); status != http.StatusForbidden {
		t.Fatalf("/metrics with a non-admin key = %d, want 403", status)
	}
	status, fams := scrape(t, gw, testKey)
	if status != http.StatusOK {
		t.Fatalf("/metrics with the master key = %d", status)
	}
	calls := "litellm_mcp_tool_calls_total"
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"mcp_tool_name": "test_simple_text", "mcp_server_name": "fx", "hashed_api_key": hashOf(testKey)}, 7},
		{map[string]string{"mcp_tool_name": "test_simple_text", "mcp_server_name": "fx", "hashed_api_key": hashOf(aliasKey), "api_key_alias": "k-metrics"}, 2},
		{map[string]string{"mcp_server_name": "fx"}, 9},
		{map[string]string{"mcp_tool_name": "echo", "mcp_server_name": "bad"}, 1},
		{map[string]string{"mcp_tool_name": "echo", "mcp_server_name": "lim"}, 2},
		{map[string]string{}, 12},
	} {
		if got := sum(fams, calls, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", calls, c.labels, got, c.want)
		}
	}
	server := "mcp_server_operation_duration_seconds"
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"mcp_method_name": "tools/call"}, 13},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_transport": "streamable_http"}, 11},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_transport": "rest"}, 1},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_transport": "sse"}, 1},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_protocol_version": "2025-11-25", "mcp_transport": "streamable_http"}, 2},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_protocol_version": "2026-07-28"}, 9},
		{map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "test_simple_text", "error_type": ""}, 9},
		{map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "_OTHER", "error_type": "unknown_tool"}, 1},
		{map[string]string{"mcp_method_name": "tools/call", "error_type": "upstream_rpc"}, 1},
		{map[string]string{"mcp_method_name": "tools/call", "error_type": "limit_exceeded"}, 1},
		{map[string]string{"mcp_method_name": "initialize", "mcp_transport": "sse"}, 1},
	} {
		if got := sum(fams, server, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", server, c.labels, got, c.want)
		}
	}
	client := "mcp_client_operation_duration_seconds"
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"mcp_method_name": "tools/call", "mcp_server_name": "fx", "gen_ai_tool_name": "test_simple_text", "error_type": ""}, 9},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_server_name": "bad", "error_type": "upstream_rpc"}, 1},
		{map[string]string{"mcp_method_name": "tools/call", "mcp_server_name": "lim"}, 1}, // the refused one was never sent
	} {
		if got := sum(fams, client, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", client, c.labels, got, c.want)
		}
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"fault": "upstream_rpc", "server": "bad"}, 1},
		{map[string]string{"fault": "limit_exceeded", "server": "lim"}, 1},
		{map[string]string{"fault": "unknown_tool", "server": ""}, 1},
		{map[string]string{}, 3},
	} {
		if got := sum(fams, "mcpgw_faults_total", c.labels); got != c.want {
			t.Errorf("mcpgw_faults_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := sum(fams, "mcpgw_rate_limit_rejections_total", map[string]string{"server": "lim"}); got != 1 {
		t.Errorf("rate-limit rejections = %v, want 1", got)
	}
	if got := sum(fams, "mcpgw_upstream_sessions_open", map[string]string{"server": "fx"}); got < 1 {
		t.Errorf("upstream sessions open on fx = %v, want the pooled one", got)
	}
	if fams["mcpgw_listens_open"] == nil {
		t.Error("mcpgw_listens_open missing")
	}
	if got := sum(fams, "mcpgw_config_generation", nil); got != 1 {
		t.Errorf("config generation = %v, want 1", got)
	}
	if fams["litellm_mcp_tool_call_spend_metric_total"] != nil && sum(fams, "litellm_mcp_tool_call_spend_metric_total", nil) != 0 {
		t.Error("spend counted without a cost")
	}
}

// TestMetricsPublicAndLabels: require_auth_for_metrics_endpoint false
// serves /metrics without a key, and prometheus_metrics_config narrows the
// tool metrics' labels to those it includes.
func TestMetricsPublicAndLabels(t *testing.T) {
	fx := testpeers.StartGoFixtureHTTP(t, false)
	gw := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
litellm_settings:
  require_auth_for_metrics_endpoint: false
  prometheus_metrics_config:
    - group: mcp
      metrics: [litellm_mcp_tool_calls_total]
      include_labels: [mcp_tool_name, mcp_server_name]
mcp_servers:
  fx:
    url: %s
`, testKey, fx), nil)
	_, _, body := rpc(t, gw.url+"/mcp", modernHeaders("tools/call", "fx-test_simple_text"),
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},`+modernMeta+`}}`)
	if body["result"] == nil {
		t.Fatalf("call: %v", body)
	}
	status, fams := scrape(t, gw.url, "")
	if status != http.StatusOK {
		t.Fatalf("public /metrics = %d", status)
	}
	f := fams["litellm_mcp_tool_calls_total"]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("tool calls: %v", f)
	}
	var names []string
	for _, l := range f.GetMetric()[0].GetLabel() {
		names = append(names, l.GetName())
	}
	if strings.Join(names, ",") != "mcp_server_name,mcp_tool_name" || f.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Fatalf("labels %v value %v, want only the tool and server", names, f.GetMetric()[0].GetCounter().GetValue())
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAccessLogOneLinePerRequest: every downstream request of the workload
// writes one INFO access-log line with its method, target, caller and
// outcome, and no line carries an argument.
func TestAccessLogOneLinePerRequest(t *testing.T) {
	var buf syncBuffer
	metricsWorkload(t, &buf)
	var toolCalls, faults int
	aliased := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "ARG-MARKER-42") || strings.Contains(line, "secret_marker") || strings.Contains(line, testKey) {
			t.Fatalf("a log line carries an argument or the key: %s", line)
		}
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "mcp request" {
			continue
		}
		if rec["level"] != "INFO" {
			t.Fatalf("access line not at INFO: %s", line)
		}
		if rec["method"] == "tools/call" {
			toolCalls++
			if rec["key_alias"] == "k-metrics" {
				aliased++
			}
			if rec["fault"] != nil {
				faults++
			}
			if rec["target"] == nil || rec["status"] == nil || rec["duration_ms"] == nil {
				t.Fatalf("access line lacks a field: %s", line)
			}
		}
	}
	if toolCalls != 13 || aliased != 2 || faults != 3 {
		t.Fatalf("access lines: %d tool calls (want 13), %d by the aliased key (want 2), %d faults (want 3)", toolCalls, aliased, faults)
	}
}

// TestMetricsTimeTheWebhook: each custom_auth call is timed by outcome,
// and a proxy_admin identity from the webhook may scrape /metrics.
func TestMetricsTimeTheWebhook(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			APIKey string `json:"api_key"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.APIKey != "sk-hook-admin" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"user_id":"ops","user_role":"proxy_admin"}`))
	}))
	t.Cleanup(hook.Close)
	gw := startGateway(t, fmt.Sprintf("general_settings:\n  master_key: %s\n  custom_auth: %s\n", testKey, hook.URL), nil)
	if status, _ := scrape(t, gw.url, "sk-hook-wrong"); status != http.StatusUnauthorized {
		t.Fatalf("/metrics with a key the webhook refuses = %d", status)
	}
	status, fams := scrape(t, gw.url, "sk-hook-admin")
	if status != http.StatusOK {
		t.Fatalf("/metrics with the webhook's admin = %d", status)
	}
	// The scrape's own call is observed before the registry is read.
	if got := sum(fams, "mcpgw_webhook_duration_seconds", map[string]string{"outcome": "refused"}); got != 1 {
		t.Errorf("refused webhook calls = %v, want 1", got)
	}
	if got := sum(fams, "mcpgw_webhook_duration_seconds", map[string]string{"outcome": "ok"}); got != 1 {
		t.Errorf("ok webhook calls = %v, want 1", got)
	}
}
