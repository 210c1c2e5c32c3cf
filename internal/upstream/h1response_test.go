package upstream

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// readAll reads one response to method from in with read (readResponse or
// http.ReadResponse), its body to its end, and returns it with the body,
// whether the body ended cleanly, and what is left on the connection.
func readAll(t *testing.T, in []byte, method string, read func(*bufio.Reader, *http.Request) (*http.Response, error)) (*http.Response, []byte, bool, []byte, error) {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(in), h1BufSize)
	_, _ = br.Peek(1) // as exchange does: the first bytes are buffered
	req := &http.Request{Method: method}
	resp, err := read(br, req)
	if err != nil {
		return nil, nil, false, nil, err
	}
	body, berr := io.ReadAll(resp.Body)
	rest, _ := io.ReadAll(br)
	return resp, body, berr == nil, rest, nil
}

func sameResponse(t *testing.T, in []byte, method string) (quick bool) {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(in), h1BufSize)
	_, _ = br.Peek(1)
	if quickResponse(br, &http.Request{Method: method}) == nil {
		return false // left to http.ReadResponse
	}
	got, gotBody, gotOK, gotRest, err := readAll(t, in, method, readResponse)
	if err != nil {
		t.Fatalf("readResponse(%q) = %v after quickResponse took it", in, err)
	}
	want, wantBody, wantOK, wantRest, err := readAll(t, in, method, http.ReadResponse)
	if err != nil {
		t.Fatalf("quickResponse took %q, which http.ReadResponse refuses: %v", in, err)
	}
	if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
		got.ContentLength != want.ContentLength || got.Close != want.Close ||
		!reflect.DeepEqual(got.TransferEncoding, want.TransferEncoding) || !reflect.DeepEqual(got.Header, want.Header) {
		t.Fatalf("%q:\n got %s %d %s cl=%d close=%v te=%v %v\nwant %s %d %s cl=%d close=%v te=%v %v", in,
			got.Status, got.StatusCode, got.Proto, got.ContentLength, got.Close, got.TransferEncoding, got.Header,
			want.Status, want.StatusCode, want.Proto, want.ContentLength, want.Close, want.TransferEncoding, want.Header)
	}
	if gotOK != wantOK || (wantOK && !bytes.Equal(gotBody, wantBody)) {
		t.Fatalf("%q: body %q (clean end %v), want %q (%v)", in, gotBody, gotOK, wantBody, wantOK)
	}
	if wantOK && !bytes.Equal(gotRest, wantRest) {
		t.Fatalf("%q: left %q on the connection, want %q", in, gotRest, wantRest)
	}
	return true
}

var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: abc\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"12\r\nevent: message\r\ndat\r\n5\r\na: {}\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Late: 1\r\n\r\nnext",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nnext",
	"HTTP/1.1 200 OK\r\nCache-Control: no-cache, no-transform\r\nConnection: keep-alive\r\nContent-Type: text/event-stream\r\n" +
		"Date: Wed, 02 Dec 2026 12:46:14 GMT\r\nTransfer-Encoding: chunked\r\n\r\n7\r\nevent: \r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 202 Accepted\r\ncontent-length:  3 \r\nx-a: 1\r\nX-A: 2\r\n\r\nabcdef",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\r\nFolded: a\r\n b\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\r\nBad Key: a\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\na",
	"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 1\r\n\r\na",
	"HTTP/1.1 200 OK\r\nX: caf\xc3\xa9\r\nContent-Length: 1\r\n\r\na",
	// Unicode folding must not make a framing token: the Kelvin sign folds to "k", the long s to "s".
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u212aed\r\n\r\n1\r\na\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: clo\u017fe\r\nContent-Length: 1\r\n\r\na",
}

// TestReadResponseMatchesNetHTTP: every answer quickResponse takes reads as
// http.ReadResponse reads it (status, headers, framing, body, what is left
// for the next response), and the common MCP answers are among them.
func TestReadResponseMatchesNetHTTP(t *testing.T) {
	quick := 0
	for _, s := range responseSeeds {
		if sameResponse(t, []byte(s), http.MethodPost) {
			quick++
		}
		sameResponse(t, []byte(s), http.MethodHead)
	}
	if quick < 7 {
		t.Fatalf("quickResponse took %d of the seeds, want the 7 common answers at least", quick)
	}
	// The answers that are not common MCP answers are left to http.ReadResponse.
	for _, s := range []string{responseSeeds[5], responseSeeds[10], responseSeeds[11], responseSeeds[12], responseSeeds[13], responseSeeds[14]} {
		br := bufio.NewReader(strings.NewReader(s))
		_, _ = br.Peek(1)
		if quickResponse(br, &http.Request{Method: http.MethodPost}) != nil {
			t.Errorf("quickResponse took %q", s)
		}
	}
}

// TestReadResponseAllocations: the common answer costs a handful of allocations.
func TestReadResponseAllocations(t *testing.T) {
	in := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nMcp-Session-Id: abc\r\nDate: now\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	rd := bytes.NewReader(in)
	br := bufio.NewReaderSize(rd, h1BufSize)
	req := &http.Request{Method: http.MethodPost}
	var buf [64]byte
	n := allocstest.Least(200, func() {
		rd.Reset(in)
		br.Reset(rd)
		_, _ = br.Peek(1)
		resp, err := readResponse(br, req)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf[:]); err != nil {
				break
			}
		}
	})
	if n > 8 {
		t.Errorf("%v allocations per response, want at most 8", n)
	}
}

func FuzzReadResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sameResponse(t, in, http.MethodPost)
	})
}

// TestHeaderKeys: the names newRequestFor sets are the canonical forms of the protocol's.
func TestHeaderKeys(t *testing.T) {
	for key, name := range map[string]string{keySessionID: mcp.HeaderSessionID, keyProtocolVersion: mcp.HeaderProtocolVersion,
		keyMethod: mcp.HeaderMethod, keyName: mcp.HeaderName, keyContentType: "content-type", keyAccept: "accept"} {
		if c := http.CanonicalHeaderKey(name); c != key {
			t.Errorf("key %q for %s, want %q", key, name, c)
		}
	}
}
