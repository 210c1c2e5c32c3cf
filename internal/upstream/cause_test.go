package upstream

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// An operator must be able to tell why an upstream fails: each cause is
// logged once at WARN, naming the cause but never a body, a credential or an
// argument, while the caller still sees only the generic text.
func TestFailureCauseLoggedOnceForOperators(t *testing.T) {
	const secret = "SECRET-MARKER-7f3a"
	const body = "BODY-MARKER-c91e"
	cases := []struct {
		name      string
		cfg       func(t *testing.T) Config
		cause     string // the log line must contain this
		forCaller string // the caller-facing message (Classify), unchanged
	}{
		{"missing stdio command", func(t *testing.T) Config {
			return Config{Transport: TransportStdio, Command: "/nonexistent/mcpgw-no-such-server", Args: []string{"--token=" + secret}}
		}, "command not found", "cannot start upstream process"},
		{"connection refused", func(t *testing.T) Config {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close()
			return Config{URL: "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp?key=" + secret}
		}, "connection refused", "cannot reach upstream"},
		{"DNS failure", func(t *testing.T) Config {
			return Config{URL: "http://mcpgw-no-such-host.invalid/mcp/" + secret}
		}, "DNS lookup failed", "cannot reach upstream"},
		{"TLS failure", func(t *testing.T) Config {
			srv := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate nobody trusts
			t.Cleanup(srv.Close)
			return Config{URL: srv.URL + "/mcp/" + secret}
		}, "TLS", "cannot reach upstream"},
		{"HTTP 400 with a body", func(t *testing.T) Config {
			f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				http.Error(w, body+" echoing Authorization: Bearer "+secret, http.StatusBadRequest)
			})
			return Config{URL: f.url(), Auth: auth.PolicyConfig{AuthType: "bearer_token", AuthValue: secret}}
		}, "HTTP 400", "upstream answered HTTP 400 Bad Request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			cfg := tc.cfg(t)
			cfg.Name, cfg.ProtocolVersion, cfg.Logger = "up", "2025-11-25", logs.logger()
			cfg.RequestTimeout = 10 * time.Second
			c := newClient(t, cfg)
			for i := 0; i < 3; i++ {
				_, err := c.CallTool(context.Background(), "lookup", json.RawMessage(`{"q":"`+secret+`"}`), Options{})
				if err == nil {
					t.Fatal("expected an error")
				}
				if got := Classify(err).Message; got != tc.forCaller {
					t.Fatalf("caller sees %q, want %q", got, tc.forCaller)
				}
				time.Sleep(300 * time.Millisecond) // past a stdio restart backoff
			}
			text := logs.String()
			for _, marker := range []string{secret, body} {
				if strings.Contains(text, marker) {
					t.Fatalf("%s reached the log:\n%s", marker, text)
				}
			}
			if warns := logs.lines("WARN", tc.cause); len(warns) != 1 {
				t.Fatalf("want one WARN line naming %q, got %d; log:\n%s", tc.cause, len(warns), text)
			}
			if dbg := logs.lines("DEBUG", `"cause":`); len(dbg) == 0 || !strings.Contains(dbg[0], tc.cause) {
				t.Fatalf("the debug failure line does not name the cause %q; log:\n%s", tc.cause, text)
			}
		})
	}
}
