package upstream

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxQuickFields bounds the header fields writeRequest sorts on its stack;
// a request with more is written by (*http.Request).Write.
const maxQuickFields = 24

// writeRequest writes req to bw as (*http.Request).Write does: the request
// line, Host, User-Agent, Content-Length, the other fields sorted by name,
// the body. The requests the upstream client sends (a method of its own, a
// plain host, a body of known length or none, field names that are tokens
// and values without line breaks) are written here without the
// allocations of http.Request.Write (a transfer writer, formatted lines);
// any other request is left to it. TestWriteRequestMatchesNetHTTP holds the
// two to the same request on the wire.
func writeRequest(bw *bufio.Writer, req *http.Request) error {
	if !quickRequest(req) {
		return req.Write(bw)
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	var keys [maxQuickFields]string
	sorted := keys[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	bw.WriteString(req.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	ua := "Go-http-client/1.1"
	if v, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = strings.Trim(v[0], " \t")
		}
	}
	if ua != "" {
		writeField(bw, "User-Agent", ua)
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost { // as http.Request.Write: a POST always says its length
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		bw.WriteString("\r\n")
	}
	for _, k := range sorted {
		for _, v := range req.Header[k] {
			writeField(bw, k, strings.Trim(v, " \t"))
		}
	}
	if _, err := bw.WriteString("\r\n"); err != nil {
		closeBody(req)
		return err
	}
	if req.ContentLength == 0 {
		closeBody(req)
		return nil
	}
	n, err := io.Copy(bw, req.Body)
	req.Body.Close()
	if err == nil && n != req.ContentLength {
		err = fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
	}
	return err
}

func writeField(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// quickRequest reports a request writeRequest writes itself (see there).
func quickRequest(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		return false
	}
	if req.URL == nil || req.Close || req.TransferEncoding != nil || req.Trailer != nil || len(req.Header) > maxQuickFields {
		return false
	}
	switch {
	case req.ContentLength > 0 && req.Body != nil && req.Body != http.NoBody:
	case req.ContentLength == 0 && (req.Body == nil || req.Body == http.NoBody):
	default:
		return false
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if uri := req.URL.RequestURI(); !plainHost(host) || !httpguts.ValidHeaderFieldValue(uri) || strings.ContainsAny(uri, "\t ") {
		return false
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) { // no CR or LF either
				return false
			}
		}
	}
	return true
}

// plainHost reports a non-empty host[:port] of ASCII letters, digits, dots,
// hyphens, underscores, colons and IPv6 brackets: what the Host header
// carries unchanged (no IDNA conversion, no zone to drop).
func plainHost(host string) bool {
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(".-_:[]", c) >= 0:
		default:
			return false
		}
	}
	return true
}
