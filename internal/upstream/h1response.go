package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/mcpgw/mcpgw/internal/asciifold"
	"golang.org/x/net/http/httpguts"
)

// readResponse reads the response to req from br. The common answer of an
// MCP upstream (HTTP/1.1, a 2xx other than 204 to a request other than
// HEAD, framed by one Content-Length or by chunked encoding, no trailers
// announced, no Connection: close, its whole head already buffered) is
// parsed here in four allocations (the head as one string, the header map,
// its values, the response) where http.ReadResponse took about fifteen; any
// other answer, and any head this parser has a doubt about, is left unread
// for http.ReadResponse. FuzzReadResponse holds the two to the same result.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if resp := quickResponse(br, req); resp != nil {
		return resp, nil
	}
	return http.ReadResponse(br, req)
}

var crlf = []byte("\r\n")

// quickResponse parses the common answer from what br holds (see
// readResponse); nil, with nothing read, for anything else.
func quickResponse(br *bufio.Reader, req *http.Request) *http.Response {
	if req.Method == http.MethodHead {
		return nil
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil
	}
	head := string(buf[:end+2]) // each line with its CRLF
	line, rest, _ := strings.Cut(head, "\r\n")
	code, ok := statusCode(line)
	if !ok || code < 200 || code > 299 || code == http.StatusNoContent {
		return nil
	}
	n := strings.Count(rest, "\r\n")
	h := make(http.Header, n)
	vals := make([]string, n)
	for i := 0; rest != ""; i++ {
		l, more, _ := strings.Cut(rest, "\r\n")
		rest = more
		k, v, ok := strings.Cut(l, ":")
		if !ok || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return nil // obs-fold, a bad name or value: http.ReadResponse's to judge
		}
		k = textproto.CanonicalMIMEHeaderKey(k)
		vals[i] = strings.Trim(v, " \t")
		if vv, seen := h[k]; seen {
			h[k] = append(vv, vals[i])
		} else {
			h[k] = vals[i : i+1 : i+1]
		}
	}
	if httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		return nil // http.ReadResponse also drops the header
	}
	if _, ok := h["Trailer"]; ok {
		return nil
	}
	resp := &http.Response{Status: line[len("HTTP/1.1 "):], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Request: req}
	te, cl := h["Transfer-Encoding"], h["Content-Length"]
	switch {
	case len(te) == 1 && len(cl) == 0 && asciifold.Equal(te[0], "chunked"):
		delete(h, "Transfer-Encoding")
		resp.TransferEncoding = []string{"chunked"}
		resp.ContentLength = -1
		resp.Body = &chunkedBody{br: br, r: httputil.NewChunkedReader(br)}
	case len(te) == 0 && len(cl) == 1:
		size, err := strconv.ParseUint(cl[0], 10, 63)
		if err != nil {
			return nil
		}
		resp.ContentLength = int64(size)
		resp.Body = http.NoBody
		if size > 0 {
			resp.Body = &sizedBody{br: br, n: int64(size)}
		}
	default:
		return nil // a body that ends with the connection, or unusual framing
	}
	_, _ = br.Discard(end + 4)
	return resp
}

// statusCode returns the code of an HTTP/1.1 status line with a reason.
func statusCode(line string) (int, bool) {
	if len(line) < len("HTTP/1.1 200 ") || line[:len("HTTP/1.1 ")] != "HTTP/1.1 " || line[12] != ' ' || !httpguts.ValidHeaderFieldValue(line) {
		return 0, false
	}
	code := 0
	for _, c := range []byte(line[9:12]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	return code, true
}

// sizedBody is a body of n bytes left on br.
type sizedBody struct {
	br *bufio.Reader
	n  int64
}

func (b *sizedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.br.Read(p)
	b.n -= int64(k)
	switch {
	case b.n == 0:
		return k, io.EOF
	case err == io.EOF:
		return k, io.ErrUnexpectedEOF
	}
	return k, err
}

func (b *sizedBody) Close() error { return nil }

// errTrailer is a chunked body whose trailer is malformed.
var errTrailer = errors.New("malformed end of chunked body")

// chunkedBody is a chunked body on br; at its end the empty trailer (the
// last CRLF) is read too, so the connection holds nothing of it.
type chunkedBody struct {
	br  *bufio.Reader
	r   io.Reader
	err error // once set, every Read returns it
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	k, err := b.r.Read(p)
	if err == io.EOF {
		err = b.trailer()
	}
	b.err = err
	return k, err
}

// trailer reads the end of the body after its last chunk: the bare CRLF
// of an empty trailer, or trailer fields (read and dropped, as
// http.ReadResponse drops those the response did not announce); io.EOF
// once read, another error when the end is malformed.
func (b *chunkedBody) trailer() error {
	end, err := b.br.Peek(2)
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if bytes.Equal(end, crlf) {
		_, _ = b.br.Discard(2)
		return io.EOF
	}
	if !doubleCRLFAhead(b.br) {
		return errTrailer // as net/http: a trailer must end within the buffer
	}
	if _, err := textproto.NewReader(b.br).ReadMIMEHeader(); err != nil {
		return errTrailer
	}
	return io.EOF
}

func (b *chunkedBody) Close() error { return nil }

// doubleCRLFAhead reports whether the end of a header section (CRLF CRLF)
// comes within what br can buffer.
func doubleCRLFAhead(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := br.Peek(n)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
