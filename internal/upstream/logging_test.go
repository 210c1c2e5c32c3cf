package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func TestLoggingNamesNotArguments(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32603, Message: "boom"}))
	})
	for _, tc := range []struct {
		logErrors bool
		level     string
		absent    string
	}{{false, "DEBUG", "ERROR"}, {true, "ERROR", ""}} {
		var logs logBuffer
		c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Logger: logs.logger()})
		_, err := c.CallTool(context.Background(), "lookup_user", json.RawMessage(`{"ssn":"ssn-123-45-6789","model":"gpt-x"}`), Options{LogErrors: tc.logErrors})
		if err == nil {
			t.Fatal("expected an error")
		}
		_, _ = c.GetPrompt(context.Background(), "summarise", json.RawMessage(`{"text":"private-words"}`), Options{LogErrors: tc.logErrors})
		text := logs.String()
		for _, secret := range []string{"ssn-123-45-6789", "gpt-x", "private-words"} {
			if strings.Contains(text, secret) {
				t.Fatalf("an argument reached the log: %s", text)
			}
		}
		if len(logs.lines(tc.level, `"tools/call failed"`)) != 1 || len(logs.lines(tc.level, `"name":"lookup_user"`)) == 0 {
			t.Fatalf("LogErrors=%v: want one %s failure line naming the tool; log:\n%s", tc.logErrors, tc.level, text)
		}
		if len(logs.lines(tc.level, `"name":"summarise"`)) == 0 {
			t.Fatalf("prompt name not logged:\n%s", text)
		}
		if tc.absent != "" && len(logs.lines(tc.absent, "")) != 0 {
			t.Fatalf("unexpected %s lines:\n%s", tc.absent, text)
		}
	}
}

func TestOptionalListOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		caps     string // server capabilities in initialize
		initErr  bool   // initialize itself answers -32601
		answer   string // how prompts/list is answered: items, -32601, -32603, 401, hang
		requests int32
		items    int
		wantErr  bool
		debugLog string
	}{
		{"capability absent", `{"tools":{}}`, false, "items", 0, 0, false, ""},
		{"only the other capability", `{"resources":{}}`, false, "items", 0, 0, false, ""},
		{"initialize fails", `{}`, true, "items", 0, 0, true, ""},
		{"supported", `{"prompts":{}}`, false, "items", 1, 2, false, ""},
		{"method not found means none", `{"prompts":{}}`, false, "-32601", 1, 0, false, "Optional list rejected"},
		{"internal error", `{"prompts":{}}`, false, "-32603", 1, 0, true, ""},
		{"unauthorized", `{"prompts":{}}`, false, "401", 1, 0, true, ""},
		{"read timeout", `{"prompts":{}}`, false, "hang", 1, 0, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lists atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
				switch {
				case m.Kind() != jsonrpc.KindRequest:
					w.WriteHeader(202)
				case m.Method == "initialize" && tc.initErr:
					writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: -32601, Message: "Method not found"}))
				case m.Method == "initialize":
					writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":`+tc.caps+`,"serverInfo":{"name":"f","version":"1"}}`)))
				case m.Method == "prompts/list":
					lists.Add(1)
					switch tc.answer {
					case "items":
						writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"prompts":[{"name":"a"},{"name":"b"}]}`)))
					case "-32601", "-32603":
						code := int64(-32601)
						if tc.answer == "-32603" {
							code = -32603
						}
						writeJSON(w, 200, jsonrpc.EncodeError(m.ID, &jsonrpc.Error{Code: code, Message: "x"}))
					case "401":
						http.Error(w, "no", 401)
					case "hang":
						<-r.Context().Done()
					}
				}
			})
			var logs logBuffer
			c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", RequestTimeout: 300 * time.Millisecond, Logger: logs.logger()})
			items, err := c.ListPrompts(context.Background(), Options{})
			if (err != nil) != tc.wantErr || len(items) != tc.items {
				t.Fatalf("items=%s err=%v", items, err)
			}
			if lists.Load() != tc.requests {
				t.Fatalf("%d prompts/list requests, want %d", lists.Load(), tc.requests)
			}
			if tc.debugLog != "" && len(logs.lines("DEBUG", tc.debugLog)) != 1 {
				t.Fatalf("want one debug line %q:\n%s", tc.debugLog, logs.String())
			}
			if !tc.wantErr && len(logs.lines("WARN", ""))+len(logs.lines("ERROR", "")) != 0 {
				t.Fatalf("a successful optional list logged at warning or above:\n%s", logs.String())
			}
		})
	}
}

func TestCapabilitiesAreReadPerSession(t *testing.T) {
	var lists atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(202)
		case m.Method == "initialize":
			caps := `{}`
			if r.Header.Get("Authorization") == "Bearer with-prompts" {
				caps = `{"prompts":{}}`
			}
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"serverInfo":{"name":"f","version":"1"}}`)))
		default:
			lists.Add(1)
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"prompts":[]}`)))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	for _, tok := range []string{"with-prompts", "without"} {
		if _, err := c.ListPrompts(context.Background(), Options{Header: http.Header{"Authorization": {"Bearer " + tok}}}); err != nil {
			t.Fatal(err)
		}
	}
	if lists.Load() != 1 {
		t.Fatalf("%d list requests across two sessions, want 1", lists.Load())
	}
}

func TestCancelDuringLaterPagePropagates(t *testing.T) {
	reached := make(chan struct{})
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		if strings.Contains(string(m.Params), "cursor") {
			close(reached)
			<-r.Context().Done()
			return
		}
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"tools":[{"name":"a"}],"nextCursor":"p2"}`)))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-reached; cancel() }()
	tools, err := c.ListTools(ctx, Options{})
	if !errors.Is(err, context.Canceled) || tools != nil {
		t.Fatalf("tools=%s err=%v, want the cancellation", tools, err)
	}
}
