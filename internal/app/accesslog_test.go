package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// TestAccessLogWriter: with WithAccessLogWriter the access log writes its lines to the
// logger's output itself, buffered: the line of a call is not written at once (so not per
// request), it is there after Close, in the logger's JSON format and with the call's fields,
// and it carries neither the arguments nor the key.
func TestAccessLogWriter(t *testing.T) {
	up := newUpstream(t, fakemcp.Opts{Lists: map[string][]json.RawMessage{"tools/list": fakemcp.Tools("echo")},
		Handlers: map[string]fakemcp.Handler{"tools/call": func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(`{"content":[]}`), nil
		}}})
	var out fakemcp.LogBuffer
	a, err := app.New(configOf(t, fmt.Sprintf("  fx:\n    url: %s\n    protocol_version: 2025-11-25\n", up.url)),
		app.WithLookupEnv(noEnv), app.WithLogger(slog.New(slog.NewJSONHandler(&out, nil))), app.WithAccessLogWriter(&out))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	a.Start()
	if code, body := restCall(t, srv.URL, "fx", "echo"); code != 200 {
		t.Fatalf("call: %d %s", code, body)
	}
	if strings.Contains(out.String(), `"msg":"mcp request"`) {
		t.Fatal("the access line was written at once; it must wait in the buffer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Drain()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, line := range strings.Split(out.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "mcp request" {
			continue
		}
		if strings.Contains(line, testKey) {
			t.Fatalf("an access line carries the key: %s", line)
		}
		if rec["method"] == "tools/call" {
			found = true
			if rec["level"] != "INFO" || rec["target"] != "echo" || rec["server"] != "fx" || rec["transport"] != "rest" ||
				rec["status"] != 200.0 || rec["time"] == nil || rec["duration_ms"] == nil || rec["key_hash"] == nil {
				t.Errorf("access line: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no access line for the call in:\n%s", out.String())
	}
}
