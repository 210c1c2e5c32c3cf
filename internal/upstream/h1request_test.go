package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"sync/atomic"

	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// wire writes req with write and returns the bytes.
func wire(t *testing.T, req *http.Request, body []byte, write func(*bufio.Writer, *http.Request) error) string {
	t.Helper()
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	if err := write(bw, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	bw.Flush()
	return out.String()
}

// TestWriteRequestMatchesNetHTTP: the requests the client sends go on the wire byte for byte
// as (*http.Request).Write puts them, whether writeRequest writes them itself or not.
func TestWriteRequestMatchesNetHTTP(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8080/mcp?x=1")
	plain, _ := url.Parse("http://up.example/mcp")
	idn, _ := url.Parse("http://bücher.example/mcp")
	cases := []struct {
		name   string
		method string
		url    *url.URL
		header http.Header
		body   []byte
		quick  bool
	}{
		{"post", http.MethodPost, u, http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {"s1"},
			"Accept": {"application/json, text/event-stream"}, "Authorization": {" Bearer t "}}, []byte(`{"jsonrpc":"2.0"}`), true},
		{"get", http.MethodGet, plain, http.Header{"Accept": {"text/event-stream"}, "Last-Event-Id": {"7"}}, nil, true},
		{"delete", http.MethodDelete, plain, http.Header{"Mcp-Session-Id": {"s1"}}, nil, true},
		{"empty post", http.MethodPost, plain, http.Header{}, nil, true},
		{"user agent", http.MethodPost, plain, http.Header{"User-Agent": {"mcpgw"}, "X-Multi": {"a", "b"}}, []byte("{}"), true},
		{"no user agent", http.MethodPost, plain, http.Header{"User-Agent": {""}}, []byte("{}"), true},
		{"excluded fields", http.MethodPost, plain, http.Header{"Host": {"evil"}, "Content-Length": {"99"}}, []byte("{}"), true},
		{"line break", http.MethodPost, plain, http.Header{"X-Bad": {"a\r\nInjected: 1"}}, []byte("{}"), false},
		{"bad name", http.MethodPost, plain, http.Header{"X Bad": {"a"}}, []byte("{}"), false},
		{"idn host", http.MethodPost, idn, http.Header{}, []byte("{}"), false},
		{"put", http.MethodPut, plain, http.Header{}, []byte("{}"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *http.Request {
				r := &http.Request{Method: tc.method, URL: tc.url, Header: tc.header, Host: tc.url.Host, ContentLength: int64(len(tc.body))}
				return r
			}
			if got := quickRequest(withBody(mk(), tc.body)); got != tc.quick {
				t.Errorf("quickRequest = %v, want %v", got, tc.quick)
			}
			got := wire(t, mk(), tc.body, writeRequest)
			want := wire(t, mk(), tc.body, func(bw *bufio.Writer, r *http.Request) error { return r.Write(bw) })
			if got != want {
				t.Errorf("on the wire:\n%q\nwant\n%q", got, want)
			}
			if tc.quick && strings.Contains(got, "Injected") {
				t.Error("a line break made a field")
			}
		})
	}
}

func withBody(r *http.Request, body []byte) *http.Request {
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	return r
}

// TestWriteRequestAllocations: a tools/call POST is written without allocating.
func TestWriteRequestAllocations(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8080/mcp")
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Session-Id": {"abc"}, "Mcp-Protocol-Version": {"2025-11-25"}}
	bw := bufio.NewWriterSize(io.Discard, h1BufSize)
	rd := bytes.NewReader(body)
	req := &http.Request{Method: http.MethodPost, URL: u, Host: u.Host, Header: h, ContentLength: int64(len(body)), Body: io.NopCloser(rd)}
	n := allocstest.Least(200, func() {
		rd.Reset(body)
		if err := writeRequest(bw, req); err != nil {
			t.Fatal(err)
		}
	})
	if n > 0 {
		t.Errorf("%v allocations per request, want none", n)
	}
}

// A URL's user:password reaches the upstream as Basic authorization, as
// http.Client sends it, whichever path writes the request.
func TestURLUserinfoSentAsBasicAuth(t *testing.T) {
	var got atomic.Value
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		got.Store(r.Header.Get("Authorization"))
		writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"content":[]}`)))
	})
	u := strings.Replace(f.url(), "http://", "http://alice:pw@", 1)
	c := newClient(t, Config{Name: "up", URL: u, ProtocolVersion: "2025-11-25"})
	if _, err := c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"x","arguments":{}}`), Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "Basic YWxpY2U6cHc="; got.Load() != want {
		t.Fatalf("Authorization = %v, want %q", got.Load(), want)
	}
}
