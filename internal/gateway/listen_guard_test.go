package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// listeningUpstream puts a modern upstream in front of fake that answers
// subscriptions/listen with an SSE stream carrying events, then holds it open;
// every other request goes to fake.
func listeningUpstream(t *testing.T, fake *fakemcp.Server, events ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if m, err := jsonrpc.Decode(body); err == nil && m.Method == mcp.MethodSubscriptionsListen {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			for _, ev := range events {
				_, _ = io.WriteString(w, "event: message\ndata: "+ev+"\n\n")
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, fake.URL(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	return srv.URL + "/mcp"
}

// An empty resourceSubscriptions entry plus an upstream with a catch-all
// template used to reach Filter.wants with "" and index out of range on the
// next resources/updated, on a goroutine without recover: the process died.
func TestListenRefusesEmptyResourceSubscription(t *testing.T) {
	fake := fakemcp.New(t, fakemcp.Opts{
		Caps:  `{"resources":{"subscribe":true,"listChanged":true}}`,
		Lists: map[string][]json.RawMessage{mcp.MethodResourcesTemplatesList: fakemcp.Templates("{+uri}")},
	})
	url := listeningUpstream(t, fake,
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":[""]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}}`)
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second}, upSpec{name: "fs", fake: fake, url: url})
	for _, tt := range []struct{ name, filter, want string }{
		{"empty uri", `{"resourceSubscriptions":[""]}`, "must not be empty"},
		{"no scheme", `{"resourceSubscriptions":["relative/path"]}`, "not an absolute URI"},
		{"control character", `{"resourceSubscriptions":["file:///a\nb"]}`, "not an absolute URI"},
		{"too many", `{"resourceSubscriptions":[` + strings.TrimSuffix(strings.Repeat(`"file:///a",`, MaxResourceSubscriptions+1), ",") + `]}`, "at most"},
		{"not a list", `{"resourceSubscriptions":"file:///a"}`, "SubscriptionFilter"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			acked := false
			out := listenRaw(g, ctx, Operation{Caller: master, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(tt.filter),
				func(json.RawMessage) { acked = true }, func(string, json.RawMessage) {})
			wantError(t, out, jsonrpc.CodeInvalidParams, http.StatusBadRequest)
			if acked || !strings.Contains(out.Err.Message, tt.want) {
				t.Fatalf("acked=%v message %q, want it to contain %q", acked, out.Err.Message, tt.want)
			}
		})
	}
}

// Filter.wants itself must not panic on an entry that slipped through.
func TestFilterWantsEmptyEntry(t *testing.T) {
	f := Filter{ResourceSubscriptions: []string{""}}
	if f.wants(mcp.NotifResourcesUpdated, json.RawMessage(`{"uri":"file:///x"}`)) {
		t.Fatal("an empty subscription matched a URI")
	}
}

// A panic in a listen's event path (here the caller's emit) is recovered and
// logged: the listen ends, the process keeps serving.
func TestListenRecoversPanic(t *testing.T) {
	var lists atomic.Int64 // every listing differs: each change is one the caller sees
	fake := fakemcp.New(t, fakemcp.Opts{
		Caps: `{"tools":{"listChanged":true}}`,
		Handlers: map[string]fakemcp.Handler{mcp.MethodToolsList: func(json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			return json.RawMessage(fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}]}`, lists.Add(1))), nil
		}},
	})
	url := listeningUpstream(t, fake,
		`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`)
	var logs fakemcp.LogBuffer
	g := newTestGateway(t, Config{ListTimeout: 5 * time.Second, Logger: logs.Logger()}, upSpec{name: "t", fake: fake, url: url})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	listenRaw(g, ctx, Operation{Caller: master, Surface: fault.Modern, Method: mcp.MethodSubscriptionsListen}, json.RawMessage(`{"toolsListChanged":true}`),
		func(json.RawMessage) {}, func(string, json.RawMessage) { panic("secret-argument-value") })
	if ctx.Err() != nil {
		t.Fatal("the listen did not end after its goroutine panicked")
	}
	if l := logs.String(); !strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, "secret-argument-value") {
		t.Fatalf("want an ERROR log without the panic value, got %s", l)
	}
}

// FuzzParseFilter: a filter from outside either is refused with Invalid
// Params or holds only entries that match safely.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`{"resourceSubscriptions":[""]}`, `{"resourceSubscriptions":["file:///a/"]}`, `{"toolsListChanged":true}`,
		`{"resourceSubscriptions":["x:"]}`, `[]`, `{"resourceSubscriptions":null}`,
	} {
		f.Add([]byte(s), "file:///a/b")
	}
	f.Fuzz(func(t *testing.T, raw []byte, uri string) {
		filter, err := ParseFilter(raw)
		if err != nil {
			if err.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("code %d", err.Code)
			}
			return
		}
		if len(filter.ResourceSubscriptions) > MaxResourceSubscriptions {
			t.Fatalf("%d entries accepted", len(filter.ResourceSubscriptions))
		}
		for _, u := range filter.ResourceSubscriptions {
			if u == "" {
				t.Fatal("empty entry accepted")
			}
		}
		params := jsonrpc.AppendString([]byte(`{"uri":`), uri)
		filter.wants(mcp.NotifResourcesUpdated, append(params, '}'))
	})
}
