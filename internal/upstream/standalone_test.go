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

// A legacy upstream may send a request it did not tie to the call on its GET
// stream; it reaches the caller of the one call in flight, whether the
// session is the shared one or one of a caller's own credentials (whose GET
// stream is opened for the call).
func TestStandaloneStreamRequestReachesTheCaller(t *testing.T) {
	for _, header := range []http.Header{nil, {"X-User": {"u1"}}} {
		t.Run(fmt.Sprint(len(header)), func(t *testing.T) { standaloneRequestReachesTheCaller(t, header) })
	}
}

func standaloneRequestReachesTheCaller(t *testing.T, header http.Header) {
	stream := make(chan []byte, 4)
	answered := make(chan string, 1)
	var f *fakeUpstream
	f = newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case m.Kind() == jsonrpc.KindNotification:
			w.WriteHeader(202)
		case m.IsResponse():
			answered <- string(m.Result)
			w.WriteHeader(202)
		default: // tools/call: ask on the GET stream, answer after the reply
			stream <- jsonrpc.EncodeRequest(jsonrpc.IntID(9), "elicitation/create", json.RawMessage(`{"message":"side?"}`))
			select {
			case got := <-answered:
				writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[{"type":"text","text":`+fmt.Sprintf("%q", got)+`}]}`)))
			case <-time.After(5 * time.Second):
				writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[],"isError":true}`)))
			}
		}
	})
	f.srv.Config.Handler = getHook(f.srv.Config.Handler, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for {
			select {
			case msg := <-stream:
				fmt.Fprintf(w, "data: %s\n\n", msg)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	in := &Interactions{Elicit: func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept","content":{"who":"me"}}`), nil
	}}
	res, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{Interactions: in, Header: header})
	if err != nil || !strings.Contains(string(res.Raw), "accept") {
		t.Fatalf("res=%s err=%v", res.Raw, err)
	}
}

// getHook routes GET requests to get and everything else to next.
func getHook(next http.Handler, get http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			get(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
