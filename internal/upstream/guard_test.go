package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func TestRecoverPanic(t *testing.T) {
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: "http://127.0.0.1:1/mcp", Logger: logs.logger()})
	failed := false
	func() {
		defer c.recoverPanic("test", func() { failed = true })
		panic("PANIC-ARG-SECRET")
	}()
	if !failed || len(logs.lines("ERROR", `"where":"test"`)) != 1 || strings.Contains(logs.String(), "PANIC-ARG-SECRET") {
		t.Fatalf("failed=%v log:\n%s", failed, logs.String())
	}
}

// A panicking interaction handler or notification callback (gateway code run
// on the client's goroutines) fails only what it was handling: the call
// still gets its answer, the upstream gets a JSON-RPC error, and the process
// keeps serving.
func TestPanickingCallbacksDoNotCrash(t *testing.T) {
	answered := make(chan *jsonrpc.Message, 1)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case m.IsResponse():
			answered <- m
			w.WriteHeader(202)
		case m.Kind() == jsonrpc.KindNotification:
			w.WriteHeader(202)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeNotification("notifications/tools/list_changed", nil))
			fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeRequest(jsonrpc.IntID(7), "elicitation/create", json.RawMessage(`{"message":"?"}`)))
			w.(http.Flusher).Flush()
			select {
			case got := <-answered:
				fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(m.ID, json.RawMessage(fmt.Sprintf(`{"content":[],"code":%d}`, got.Error.Code))))
			case <-time.After(5 * time.Second):
				fmt.Fprintf(w, "data: %s\n\n", jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[],"code":0}`)))
			}
		}
	})
	var logs logBuffer
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", Logger: logs.logger(),
		OnNotification: func(string, string, json.RawMessage) { panic("PANIC-ARG-SECRET") }})
	in := &Interactions{Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("PANIC-ARG-SECRET") }}
	res, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Interactions: in})
	if err != nil || !strings.Contains(string(res.Raw), `"code":-32603`) {
		t.Fatalf("res=%s err=%v", res.Raw, err)
	}
	if n := len(logs.lines("ERROR", "recovered from a panic")); n != 2 || strings.Contains(logs.String(), "PANIC-ARG-SECRET") {
		t.Fatalf("%d panic lines, log:\n%s", n, logs.String())
	}
}
