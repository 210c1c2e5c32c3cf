package openapimcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// MaxResponseBytes is the most of an API response body a tool result carries; a longer body
// is cut there and the result says so.
const MaxResponseBytes = 1 << 20

// maxErrorBody is the most of a non-2xx body an error result quotes.
const maxErrorBody = 4096

// Server serves one OpenAPI document's operations as MCP tools (an upstream.LocalServer). It
// is immutable after Load and safe for concurrent use.
type Server struct {
	name   string
	base   *url.URL
	tools  map[string]*operation
	list   json.RawMessage
	client *http.Client
}

// Options configure Load.
type Options struct {
	// Name names the server in its initialize answer.
	Name string
	// BaseURL is where operations are called (the server's url); "" means the document's
	// first servers[].url.
	BaseURL string
	// Client carries the document fetch (for a URL spec_path) and every call; nil means a
	// client of the package's own. Redirects are never followed on calls.
	Client *http.Client
}

// Load reads the document at specPath (a file path or an http(s) URL, at most
// MaxSpecBytes), converts its operations to tools and returns the Server.
func Load(ctx context.Context, specPath string, opts Options) (*Server, error) {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Second}
	}
	data, err := read(ctx, specPath, opts.Client)
	if err != nil {
		return nil, err
	}
	return build(data, opts)
}

// build converts a document already read.
func build(data []byte, opts Options) (*Server, error) {
	doc, err := decode(data)
	if err != nil {
		return nil, err
	}
	ops, err := convert(doc)
	if err != nil {
		return nil, err
	}
	base := opts.BaseURL
	if base == "" {
		base = serverURL(doc)
	}
	u, err := url.Parse(base)
	if base == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("no base URL: set the server's url or give the document an absolute servers[0].url")
	}
	client := *opts.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s := &Server{name: opts.Name, base: u, tools: make(map[string]*operation, len(ops)), client: &client}
	defs := make([]map[string]any, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		s.tools[op.Name] = op
		ann := map[string]any{"readOnlyHint": op.readOnly, "destructiveHint": op.method == http.MethodDelete,
			"idempotentHint": op.readOnly || op.method == http.MethodPut || op.method == http.MethodDelete, "openWorldHint": true}
		defs = append(defs, map[string]any{"name": op.Name, "description": op.Description, "inputSchema": op.Schema, "annotations": ann})
	}
	if s.list, err = json.Marshal(map[string]any{"tools": defs}); err != nil {
		return nil, fmt.Errorf("encoding the tools: %w", err)
	}
	return s, nil
}

// read returns the document's bytes from a file or an http(s) URL.
func read(ctx context.Context, specPath string, client *http.Client) ([]byte, error) {
	lower := strings.ToLower(specPath)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		f, err := os.Open(specPath)
		if err != nil {
			return nil, fmt.Errorf("reading spec_path: %w", err)
		}
		defer f.Close()
		return readAtMost(f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, specPath, nil)
	if err != nil {
		return nil, errors.New("spec_path is not a valid URL")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, errors.New("fetching spec_path failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching spec_path: HTTP %d", resp.StatusCode)
	}
	return readAtMost(resp.Body)
}

func readAtMost(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading spec_path: %w", err)
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("spec_path is larger than %d bytes", MaxSpecBytes)
	}
	return data, nil
}

// Tools is the tools/list result.
func (s *Server) Tools() json.RawMessage { return s.list }

// Implementation names the server.
func (s *Server) Implementation() mcp.Implementation {
	return mcp.Implementation{Name: s.name, Version: "openapi"}
}

// CallTool calls the operation params.name with params.arguments and hdr (the server's
// credentials and static headers, which header parameters never replace). The answer is the
// response body as text (JSON indented); a non-2xx status is an isError result naming it.
func (s *Server) CallTool(ctx context.Context, params json.RawMessage, hdr http.Header) (json.RawMessage, error) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, errors.New("invalid tools/call params")
	}
	op := s.tools[p.Name]
	if op == nil {
		return nil, fmt.Errorf("unknown tool: %s", p.Name)
	}
	req, err := s.request(ctx, op, p.Arguments, hdr)
	if err != nil {
		return toolText(err.Error(), true), nil
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return toolText("the API could not be reached", true), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return toolText("the API's answer could not be read", true), nil
	}
	cut := len(body) > MaxResponseBytes
	if cut {
		body = body[:MaxResponseBytes]
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := "HTTP " + strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
		if len(body) > 0 {
			msg += ": " + clip(string(body), maxErrorBody)
		}
		return toolText(msg, true), nil
	}
	text := string(body)
	var pretty bytes.Buffer
	if !cut && json.Valid(body) && json.Indent(&pretty, body, "", "  ") == nil {
		text = pretty.String()
	}
	if cut {
		text += fmt.Sprintf("\n[response cut at %d bytes]", MaxResponseBytes)
	}
	return toolText(text, false), nil
}

// request builds op's HTTP request from args: path parameters escaped into the path, query
// parameters in the query, header parameters as headers (never over hdr's), body as JSON.
func (s *Server) request(ctx context.Context, op *operation, args map[string]any, hdr http.Header) (*http.Request, error) {
	path := op.path
	q := url.Values{}
	extra := http.Header{}
	for _, pr := range op.params {
		v, ok := args[pr.arg]
		if !ok || v == nil {
			if pr.in == "path" {
				return nil, fmt.Errorf("missing required argument %q", pr.arg)
			}
			continue
		}
		str := argString(v)
		switch pr.in {
		case "path":
			path = strings.ReplaceAll(path, "{"+pr.name+"}", url.PathEscape(str))
		case "query":
			if list, ok := v.([]any); ok {
				for _, e := range list {
					q.Add(pr.name, argString(e))
				}
				continue
			}
			q.Set(pr.name, str)
		case "header":
			if strings.ContainsAny(str, "\r\n") {
				return nil, fmt.Errorf("argument %q is not a valid header value", pr.arg)
			}
			extra.Set(pr.name, str)
		}
	}
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	var body io.Reader
	if b, ok := args["body"]; ok && op.body {
		data, err := json.Marshal(b)
		if err != nil {
			return nil, errors.New("the body argument cannot be encoded")
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, op.method, u.String(), body)
	if err != nil {
		return nil, errors.New("the request cannot be built")
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	for k, vs := range hdr { // credentials and static headers win over header parameters
		if !strings.HasPrefix(strings.ToLower(k), "mcp-") {
			req.Header[k] = vs
		}
	}
	req.Header.Set("Accept", "application/json, */*;q=0.5")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// argString is an argument's text in a path, query or header.
func argString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func toolText(text string, isError bool) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError})
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
