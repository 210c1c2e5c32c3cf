package h1serve

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpgw/mcpgw/internal/asciifold"
	"golang.org/x/net/http/httpguts"
)

// span is one header line's key and value in the head.
type span struct{ ks, ke, vs, ve int }

// maxCLDigits bounds a Content-Length's digits, so that it fits an int64.
const maxCLDigits = 18

// parseHead parses a request head (see reader.readHead) into r and ex's
// fields. It canonicalises header keys in head, in place. A request the
// server must refuse comes back as an httpError.
func (ex *response) parseHead(r *http.Request, head []byte) *httpError {
	nl := bytes.IndexByte(head, '\n')
	line := trimCR(head[:nl])
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badRequest("malformed request line")
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 < 0 {
		return badRequest("malformed request line")
	}
	sp2 += sp1 + 1
	method, target, proto := line[:sp1], line[sp1+1:sp2], line[sp2+1:]
	for _, c := range method {
		if !httpguts.IsTokenRune(rune(c)) {
			return badRequest("invalid method")
		}
	}
	switch string(proto) {
	case "HTTP/1.1":
		ex.is11 = true
	case "HTTP/1.0":
	default:
		major, _, ok := http.ParseHTTPVersion(string(proto))
		if !ok {
			return badRequest("malformed HTTP version")
		}
		if major != 1 {
			return &httpError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
		}
		return badRequest("malformed HTTP version")
	}
	if len(target) == 0 {
		return badRequest("empty request target")
	}

	var stack [32]span
	spans, herr := scanHeader(head[nl+1:], nl+1, stack[:0])
	if herr != nil {
		return herr
	}

	s := string(head)
	r.Method = internMethod(method, s, sp1)
	r.RequestURI = s[sp1+1 : sp2]
	if ex.is11 {
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	} else {
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.0", 1, 0
	}
	if err := ex.parseTarget(r, r.RequestURI); err != nil {
		return err
	}
	return ex.parseHeader(r, s, spans)
}

// scanHeader validates the header lines in rest (which starts at offset
// base of the head), canonicalises their keys in place and appends their
// spans to spans.
func scanHeader(rest []byte, base int, spans []span) ([]span, *httpError) {
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		l := trimCR(rest[:i])
		if len(l) == 0 {
			return nil, badRequest("malformed header")
		}
		if l[0] == ' ' || l[0] == '\t' {
			return nil, badRequest("obsolete line folding")
		}
		colon := bytes.IndexByte(l, ':')
		if colon <= 0 {
			return nil, badRequest("malformed header line")
		}
		upper := true
		for j := 0; j < colon; j++ {
			c := l[j]
			if !httpguts.IsTokenRune(rune(c)) {
				return nil, badRequest("invalid header name")
			}
			if upper && 'a' <= c && c <= 'z' {
				l[j] = c - ('a' - 'A')
			} else if !upper && 'A' <= c && c <= 'Z' {
				l[j] = c + ('a' - 'A')
			}
			upper = c == '-'
		}
		vs, ve := colon+1, len(l)
		for vs < ve && (l[vs] == ' ' || l[vs] == '\t') {
			vs++
		}
		for ve > vs && (l[ve-1] == ' ' || l[ve-1] == '\t') {
			ve--
		}
		for _, c := range l[vs:ve] {
			if c < ' ' && c != '\t' || c == 0x7f {
				return nil, badRequest("invalid header value")
			}
		}
		spans = append(spans, span{base, base + colon, base + vs, base + ve})
		base += i + 1
		rest = rest[i+1:]
	}
	return spans, nil
}

// parseHeader builds the request's header map from the spans of s and
// applies what the framing headers say.
func (ex *response) parseHeader(r *http.Request, s string, spans []span) *httpError {
	h := make(http.Header, len(spans))
	strs := make([]string, len(spans))
	var host string
	hosts, cls := 0, 0
	var cl string
	var te []string
	for _, sp := range spans {
		k := s[sp.ks:sp.ke]
		v := s[sp.vs:sp.ve]
		switch k {
		case "Host":
			hosts++
			host = v
			continue
		case "Transfer-Encoding":
			te = append(te, v)
			continue
		case "Content-Length":
			cls++
			if cls > 1 && v != cl {
				return badRequest("conflicting Content-Length")
			}
			cl = v
			if cls > 1 {
				continue
			}
		}
		if vv := h[k]; vv == nil {
			vv, strs = strs[:1:1], strs[1:]
			vv[0] = v
			h[k] = vv
		} else {
			h[k] = append(vv, v)
		}
	}
	r.Header = h
	if hosts > 1 {
		return badRequest("too many Host headers")
	}
	if hosts == 0 && ex.is11 {
		return badRequest("missing required Host header")
	}
	if hosts == 1 && !httpguts.ValidHostHeader(host) {
		return badRequest("malformed Host header")
	}
	if r.Host == "" {
		r.Host = host
	}
	if err := ex.framing(r, cl, cls > 0, te); err != nil {
		return err
	}
	conn := h["Connection"]
	if ex.is11 {
		r.Close = httpguts.HeaderValuesContainsToken(conn, "close")
	} else {
		r.Close = httpguts.HeaderValuesContainsToken(conn, "close") || !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	}
	if p, ok := h["Pragma"]; ok && len(p) > 0 && p[0] == "no-cache" {
		if _, ok := h["Cache-Control"]; !ok {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
	// As net/http: the first Expect value counts, an empty one is none,
	// and HTTP/1.0 gets no 100 Continue (stricter: a list is refused).
	if e := h["Expect"]; len(e) > 0 && e[0] != "" {
		if !asciifold.Equal(e[0], "100-continue") {
			return &httpError{http.StatusExpectationFailed, "unsupported Expect"}
		}
		ex.expectContinue = ex.is11 && r.ContentLength != 0
	}
	return nil
}

// framing sets the request's body framing from its Content-Length and
// Transfer-Encoding; a request with both, or with anything unclear, is
// refused.
func (ex *response) framing(r *http.Request, cl string, hasCL bool, te []string) *httpError {
	if len(te) > 0 {
		if !ex.is11 {
			return badRequest("Transfer-Encoding in an HTTP/1.0 request")
		}
		if hasCL {
			return badRequest("both Transfer-Encoding and Content-Length")
		}
		if len(te) != 1 || !asciifold.Equal(te[0], "chunked") { // not strings.EqualFold: "\u212a" (Kelvin) folds to "k"
			return &httpError{http.StatusNotImplemented, "unsupported transfer encoding"}
		}
		r.TransferEncoding = []string{"chunked"}
		r.ContentLength = -1
		ex.body.chunked = true
		r.Body = &ex.body
		return nil
	}
	if !hasCL {
		r.Body = http.NoBody
		return nil
	}
	if len(cl) == 0 || len(cl) > maxCLDigits {
		return badRequest("bad Content-Length")
	}
	var n int64
	for i := 0; i < len(cl); i++ {
		c := cl[i]
		if c < '0' || c > '9' {
			return badRequest("bad Content-Length")
		}
		n = n*10 + int64(c-'0')
	}
	r.ContentLength = n
	ex.body.n = n
	if n == 0 {
		r.Body = http.NoBody
		return nil
	}
	r.Body = &ex.body
	return nil
}

// parseTarget sets the request's URL (and Host, for the absolute form)
// from its request target.
func (ex *response) parseTarget(r *http.Request, target string) *httpError {
	if target == "*" {
		ex.url.Path = "*"
		r.URL = &ex.url
		return nil
	}
	if target[0] == '/' && fastPath(target) {
		p, q, hasQ := strings.Cut(target, "?")
		ex.url.Path, ex.url.RawQuery = p, q
		ex.url.ForceQuery = hasQ && q == ""
		r.URL = &ex.url
		return nil
	}
	raw := target
	authority := r.Method == http.MethodConnect && target[0] != '/'
	if authority {
		raw = "http://" + target
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return badRequest("malformed request target")
	}
	if authority {
		u.Scheme = ""
	}
	r.URL = u
	r.Host = u.Host
	return nil
}

// fastPath reports whether an origin-form target parses to a URL with
// Path and RawQuery cut at the first "?", unescaped and unchanged:
// characters url.URL keeps as they are in a path, anything visible in the
// query.
func fastPath(t string) bool {
	i := 0
	for ; i < len(t); i++ {
		c := t[i]
		if c == '?' {
			break
		}
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~$&+,/:;=@", c) >= 0) {
			return false
		}
	}
	for ; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// internMethod returns the method's constant string, or its bytes cut
// from s.
func internMethod(m []byte, s string, n int) string {
	switch string(m) {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodPost:
		return http.MethodPost
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPut:
		return http.MethodPut
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodPatch:
		return http.MethodPatch
	}
	return s[:n]
}
