package h1serve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a handler that writes down what it saw of each request.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var h strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&h, "%s=%q;", k, r.Header[k])
	}
	s := fmt.Sprintf("method=%q uri=%q url=%#v proto=%s %d.%d host=%q cl=%d te=%q close=%v body=%q bodyErr=%v header=%s",
		r.Method, r.RequestURI, *r.URL, r.Proto, r.ProtoMajor, r.ProtoMinor, r.Host, r.ContentLength, r.TransferEncoding,
		r.Close, body, err != nil, h.String())
	rec.mu.Lock()
	rec.seen = append(rec.seen, s)
	rec.mu.Unlock()
	w.Header().Set("X-Echo", "1")
	_, _ = w.Write([]byte("seen"))
}

func (rec *recorder) take() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s := rec.seen
	rec.seen = nil
	return s
}

// exchangeRaw sends raw on a new connection to addr, half-closes it and
// returns the status codes of the responses read until the server closes.
func exchangeRaw(t *testing.T, addr, raw string) []int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	all, _ := io.ReadAll(c)
	br := bufio.NewReader(bytes.NewReader(all))
	var codes []int
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// startBoth serves h with net/http and with Server and returns their
// addresses.
func startBoth(t *testing.T, h http.Handler) (std, ours string) {
	t.Helper()
	ln1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s1 := &http.Server{Handler: h, MaxHeaderBytes: 1 << 10, ErrorLog: quietLog()}
	s2 := &Server{Handler: h, MaxHeaderBytes: 1 << 10, ErrorLog: quietLog()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = s1.Serve(ln1) }()
	go func() { defer wg.Done(); _ = s2.Serve(ln2) }()
	t.Cleanup(func() {
		s1.Close()
		s2.Close()
		wg.Wait()
	})
	return ln1.Addr().String(), ln2.Addr().String()
}

// diffCases are raw requests, well-formed and not. stricter is the status
// Server refuses a request with where net/http serves it (0: the two
// agree).
var diffCases = []struct {
	name, raw string
	stricter  int
}{
	{"get", "GET /mcp HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n", 0},
	{"post length", "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello", 0},
	{"post chunked", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", 0},
	{"chunked trailer", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", 0},
	{"chunked uppercase", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n", 0},
	{"chunk too large", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nx\r\n0\r\n\r\n", 0},
	{"chunk bad hex", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nx\r\n0\r\n\r\n", 0},
	{"chunk missing crlf", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", 0},
	{"chunk bare lf", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n", 0},
	{"te and cl", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 400},
	{"te gzip", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 0},
	{"te twice", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0},
	{"te http10", "POST /x HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
	{"cl same twice", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"cl differ", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi!", 0},
	{"cl plus", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\nhi", 0},
	{"cl negative", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 0},
	{"cl spaces", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:  2 \r\n\r\nhi", 0},
	{"cl empty", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 0},
	{"cl short body", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhi", 0},
	{"cl zero", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 0},
	{"header name space", "GET / HTTP/1.1\r\nHost: a\r\nFo o: x\r\n\r\n", 0},
	{"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nFoo : x\r\n\r\n", 0},
	{"header no colon", "GET / HTTP/1.1\r\nHost: a\r\nFoo\r\n\r\n", 0},
	{"header empty name", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", 0},
	{"value ctl", "GET / HTTP/1.1\r\nHost: a\r\nFoo: a\x01b\r\n\r\n", 0},
	{"value bare cr", "GET / HTTP/1.1\r\nHost: a\r\nFoo: a\rb\r\n\r\n", 0},
	{"value del", "GET / HTTP/1.1\r\nHost: a\r\nFoo: a\x7fb\r\n\r\n", 0},
	{"value obs text", "GET / HTTP/1.1\r\nHost: a\r\nFoo: caf\xc3\xa9\r\n\r\n", 0},
	{"obs fold", "GET / HTTP/1.1\r\nHost: a\r\nFoo: a\r\n  b\r\n\r\n", 400},
	{"first line folded", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 0},
	{"bare lf", "GET /lf HTTP/1.1\nHost: a\nX-A: 1\n\n", 0},
	{"lowercase keys", "GET / HTTP/1.1\r\nhost: a\r\nx-custom-header: v\r\nmcp-session-id: s\r\nACCEPT: x\r\n\r\n", 0},
	{"repeated header", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nX-B: 2\r\nX-A: 3\r\n\r\n", 0},
	{"empty value", "GET / HTTP/1.1\r\nHost: a\r\nX-E:\r\nX-F: \r\n\r\n", 0},
	{"absolute form", "GET http://example.com:8080/x?y=1 HTTP/1.1\r\nHost: other\r\n\r\n", 0},
	{"absolute https", "GET https://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n", 0},
	{"asterisk options", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"asterisk get", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"no host 1.1", "GET / HTTP/1.1\r\nAccept: x\r\n\r\n", 0},
	{"no host 1.0", "GET / HTTP/1.0\r\nAccept: x\r\n\r\n", 0},
	{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 0},
	{"bad host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 0},
	{"host with port", "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 0},
	{"too large head", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("x", 8<<10) + "\r\n\r\n", 0},
	{"http10 keepalive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n", 0},
	{"http2 version", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 0},
	{"http version junk", "GET / HTTP/1.x\r\nHost: a\r\n\r\n", 0},
	{"http 1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 400},
	{"extra field", "GET / HTTP/1.1 x\r\nHost: a\r\n\r\n", 0},
	{"double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"bad method", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"custom method", "PROPFIND /x HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"connect", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 0},
	{"escaped path", "GET /a%20b/c%2Fd?q=%41&r=1 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"path specials", "GET /a!b(c)*d'e?x HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"force query", "GET /a? HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"two question marks", "GET /a?b? HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"double slash", "GET //host/p HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"fragment", "GET /a#frag HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"query non ascii", "GET /a?q=\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"path ctl", "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"bad escape", "GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"expect continue", "POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"expect other", "POST /x HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"pipelined", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nxGET /3 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"crlf after post", "POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"leading crlf", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"connection close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"connection tokens", "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n", 0},
	{"pragma", "GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n", 0},
	{"empty", "\r\n\r\n", 0},
	{"garbage", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 0},
	{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
	{"te kelvin sign", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chun\xe2\x84\xaaed\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"te identity", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 0},
	{"te list", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 0},
	{"te tab", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\t\r\n\r\n0\r\n\r\n", 0},
	{"chunk ext bare cr", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n", 0},
	{"chunk size bare cr", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\r\nhello\r\n0\r\n\r\n", 0},
	{"chunk ext bare lf", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;a\nhello\r\n0\r\n\r\n", 0},
	{"trailer bare cr", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-T: a\rb\r\n\r\n", 0},
	{"trailer ctl", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-T: a\x00b\r\n\r\n", 0},
	{"chunk overflow", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n", 0},
	{"cl comma list", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2, 2\r\n\r\nhi", 0},
	{"cl overflow", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\nhi", 0},
	{"cl 19 digits", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0000000000000000002\r\n\r\nhi", 400},
	{"cl hex", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 0x2\r\n\r\nhi", 0},
	{"tab in request line", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"nul in target", "GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"nul in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 0},
	{"absolute other host", "GET http://b.example/x HTTP/1.1\r\nHost: a.example\r\n\r\n", 0},
	{"connect path", "CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"expect empty", "POST /x HTTP/1.1\r\nHost: a\r\nExpect:\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"expect twice", "POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"expect continue get", "GET /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", 0},
	{"expect http10", "POST /x HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi", 0},
	{"expect list", "POST /x HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, x\r\nContent-Length: 2\r\n\r\nhi", 417},
	{"lowercase proto", "GET / http/1.1\r\nHost: a\r\n\r\n", 0},
}

// TestDifferential sends each raw request to net/http's server and to
// Server with the same recording handler and compares the statuses and
// what the handler saw.
func TestDifferential(t *testing.T) {
	rec := &recorder{}
	std, ours := startBoth(t, rec)
	for _, tc := range diffCases {
		t.Run(tc.name, func(t *testing.T) {
			wantCodes := exchangeRaw(t, std, tc.raw)
			wantSeen := rec.take()
			gotCodes := exchangeRaw(t, ours, tc.raw)
			gotSeen := rec.take()
			if tc.stricter != 0 {
				if len(gotSeen) != 0 || len(gotCodes) != 1 || gotCodes[0] != tc.stricter {
					t.Errorf("want a %d and no handler call, got %v and %q (net/http: %v)", tc.stricter, gotCodes, gotSeen, wantCodes)
				}
				return
			}
			if fmt.Sprint(gotCodes) != fmt.Sprint(wantCodes) {
				t.Errorf("statuses: got %v, net/http %v", gotCodes, wantCodes)
			}
			if strings.Join(gotSeen, "\n") != strings.Join(wantSeen, "\n") {
				t.Errorf("handler saw:\n got %q\nwant %q", gotSeen, wantSeen)
			}
		})
	}
}
