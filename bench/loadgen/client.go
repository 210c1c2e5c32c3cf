package main

// The MCP side of the load generator: one endpoint, the requests sent to it and the checks of
// their answers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// newClient is an HTTP client for conns concurrent requests to one loopback host.
func newClient(conns int) *http.Client {
	return &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns + 8,
			MaxIdleConnsPerHost: conns + 8,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// target is one MCP endpoint and how to talk to it.
type target struct {
	client *http.Client
	url    string
	key    string
}

// post sends body with hdr and reads the whole answer into buf.
func (t *target) post(ctx context.Context, body []byte, hdr map[string]string, buf *bytes.Buffer) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if t.key != "" {
		req.Header.Set("Authorization", "Bearer "+t.key)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	buf.Reset()
	_, err = io.Copy(buf, resp.Body)
	resp.Body.Close()
	return resp, err
}

// message returns the JSON-RPC message of an answer: the body itself, or
// the last "data:" line of an SSE body that carries a result or an error.
func message(body []byte, contentType string) []byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body
	}
	var last []byte
	for line := range bytes.Lines(body) {
		line = bytes.TrimRight(line, "\r\n")
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			d = bytes.TrimSpace(d)
			if bytes.Contains(d, []byte(`"result"`)) || bytes.Contains(d, []byte(`"error"`)) {
				last = d
			}
		}
	}
	return last
}

// session opens a legacy session: initialize, then notifications/initialized.
// The session id is "" when the server keeps no session (a stateless
// streamable HTTP server, as TBXark/mcp-proxy's front end is).
func (t *target) session(ctx context.Context) (string, error) {
	var buf bytes.Buffer
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyVersion +
		`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	resp, err := t.post(ctx, init, nil, &buf)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("initialize: HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	msg := message(buf.Bytes(), resp.Header.Get("Content-Type"))
	if !bytes.Contains(msg, []byte(`"protocolVersion"`)) {
		return "", fmt.Errorf("initialize: unexpected answer %.200s", buf.Bytes())
	}
	resp, err = t.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		legacyHeaders(sid), &buf)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return sid, nil
}

// legacyHeaders are the headers of a legacy request in session sid (none
// when sid is "").
func legacyHeaders(sid string) map[string]string {
	hdr := map[string]string{"MCP-Protocol-Version": legacyVersion}
	if sid != "" {
		hdr["Mcp-Session-Id"] = sid
	}
	return hdr
}

// modernMeta is the "_meta" member a modern request carries instead of a session.
func modernMeta() string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`
}

// checkCall validates one tools/call answer.
func checkCall(resp *http.Response, err error, buf *bytes.Buffer, expect string) error {
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	msg := message(buf.Bytes(), resp.Header.Get("Content-Type"))
	if !bytes.Contains(msg, []byte(expect)) || bytes.Contains(msg, []byte(`"isError":true`)) {
		return fmt.Errorf("unexpected answer: %.200s", buf.Bytes())
	}
	return nil
}

// listAll fetches one full tools/list, following nextCursor.
func listAll(ctx context.Context, t *target, hdr map[string]string, buf *bytes.Buffer, minItems int) (items, pages int, err error) {
	cursor := ""
	for pages < 100 {
		params := `{` + modernMeta() + `}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `,` + modernMeta() + `}`
		}
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`)
		resp, err := t.post(ctx, body, hdr, buf)
		if err != nil {
			return 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, buf.Bytes())
		}
		var m struct {
			Result *struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(message(buf.Bytes(), resp.Header.Get("Content-Type")), &m); err != nil || m.Result == nil {
			return 0, 0, fmt.Errorf("unexpected answer: %.200s", buf.Bytes())
		}
		pages++
		items += len(m.Result.Tools)
		if m.Result.NextCursor == "" {
			if items < minItems {
				return 0, 0, fmt.Errorf("listed %d tools, want ≥ %d", items, minItems)
			}
			return items, pages, nil
		}
		cursor = m.Result.NextCursor
	}
	return 0, 0, errors.New("more than 100 pages")
}
