package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://h.example/mcp", "https://h.example/mcp"},
		{"https://u:pw@h.example:8443/mcp?token=x#frag", "https://h.example:8443/mcp"},
		{"https://h.example/api/SECRET/mcp", "https://h.example/api/…"},
		{"https://h.example/api/", "https://h.example/api/…"},
		{"https://h.example/", "https://h.example/"},
		{"https://h.example", "https://h.example"},
		{"https://h.example/a%2FSECRET/mcp", "https://h.example/a%2FSECRET/…"},
		{"http://[::1]:80/x/y", "http://[::1]:80/x/…"},
		{"::not a url", "(invalid URL)"},
	} {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// An upstream URL may carry its credential in the path (/…/<token>/mcp) as
// well as in the query: neither reaches a log line or an error text, on a
// timeout, an unreachable upstream or an unreachable token endpoint.
func TestSecretInURLPathNeverLogged(t *testing.T) {
	const marker = "PATH-SECRET-9c1e"
	hang := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		<-r.Context().Done()
	})
	var logs logBuffer
	var errs []error
	check := func(err error) {
		t.Helper()
		if err == nil {
			t.Fatal("expected an error")
		}
		errs = append(errs, err)
	}
	c := newClient(t, Config{Name: "slow", URL: hang.srv.URL + "/api/" + marker + "/mcp?key=" + marker, ProtocolVersion: "2025-11-25",
		Logger: logs.logger(), RequestTimeout: 200 * time.Millisecond})
	_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{LogErrors: true})
	if !errors.As(err, new(*TimeoutError)) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	check(err)
	if w := logs.lines("WARN", "timed out"); len(w) != 1 || !strings.Contains(w[0], hang.srv.URL+"/api/") {
		t.Fatalf("timeout warnings = %v, want one naming scheme, host and first segment", w)
	}
	for _, transport := range []string{TransportHTTP, TransportSSE} {
		c := newClient(t, Config{Name: "down", Transport: transport, URL: "http://127.0.0.1:1/v1/" + marker + "/mcp?key=" + marker,
			ProtocolVersion: "2025-11-25", Logger: logs.logger(), RequestTimeout: time.Second})
		_, err := c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{LogErrors: true})
		check(err)
	}
	c = newClient(t, Config{Name: "mint", URL: hang.url(), ProtocolVersion: "2025-11-25", Logger: logs.logger(),
		OAuth2: &auth.ClientCredentialsConfig{TokenURL: "http://127.0.0.1:1/tenant/" + marker + "/token?k=" + marker, ClientID: "id", ClientSecret: "s"}})
	_, err = c.CallTool(context.Background(), "t", json.RawMessage(`{}`), Options{LogErrors: true})
	check(err)
	texts := []string{logs.String()}
	for _, err := range errs {
		texts = append(texts, err.Error(), Classify(err).Message)
	}
	for _, text := range texts {
		if strings.Contains(text, marker) {
			t.Fatalf("secret in a URL path leaked: %s", text)
		}
	}
}

// Whatever the configured URL, its redacted form has no userinfo, no query,
// no fragment and at most its first path segment.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"https://u:p@h/a/b?c=d#e", "http://h", "http://h/a%2Fb/c", "//h/a/b", "/a/b", "http://[::1]:1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := redactURL(raw)
		if got == "(invalid URL)" {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("redactURL(%q) = %q, not a URL: %v", raw, got, err)
		}
		if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			t.Fatalf("redactURL(%q) = %q keeps userinfo, query or fragment", raw, got)
		}
		path, ok := strings.CutPrefix(got, (&url.URL{Scheme: u.Scheme, Host: u.Host}).String())
		segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
		if !ok || len(segs) > 2 || (len(segs) == 2 && segs[1] != "…") {
			t.Fatalf("redactURL(%q) = %q keeps more than the first path segment", raw, got)
		}
	})
}

// A connection or protocol error never repeats the URL's path or query, even
// when net/http's *url.Error put the whole URL in its cause.
func TestConnectionErrorRedactsTheURL(t *testing.T) {
	const secret = "SECRET-TOKEN-in-path"
	raw := "http://127.0.0.1:1/a/" + secret + "/mcp?api_key=sk-secret-query"
	_, err := http.Get(raw)
	if err == nil {
		t.Fatal("a closed port answered")
	}
	for _, e := range []error{connErr("cannot reach upstream", err), protoErr("invalid MCP response", err)} {
		text := e.Error()
		if strings.Contains(text, secret) || strings.Contains(text, "sk-secret-query") {
			t.Fatalf("error text carries the URL's secrets: %s", text)
		}
	}
}
