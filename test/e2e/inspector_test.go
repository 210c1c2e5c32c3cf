package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Pinned MCP Inspector; test/clients/package.json installs it.
const (
	inspectorPackage = "@modelcontextprotocol/inspector"
	inspectorVersion = "2.12.0"
	inspectorTimeout = 60 * time.Second
)

// inspectorCLI returns the node binary and the absolute path of the inspector's launcher (its
// package.json bin entry, run with node rather than through the .bin shim). A missing piece fails
// the test under MCPGW_REQUIRE_PEERS=1 and skips it otherwise.
func inspectorCLI(t *testing.T) (node, entry string) {
	t.Helper()
	node, dir := nodeBinary(t)
	pkgDir, meta := nodePackage(t, dir, inspectorPackage, inspectorVersion)
	rel := meta.Bin["mcp-inspector"]
	if rel == "" {
		rel = meta.Bin["inspector"]
	}
	if rel == "" {
		peerMissing(t, inspectorPackage+"@"+inspectorVersion+" with a bin entry", npmInstallHint(dir))
	}
	return node, filepath.Join(pkgDir, filepath.FromSlash(rel))
}

// wireLog is a logging reverse proxy in front of the gateway: every exchange the inspector makes
// (request line, headers, body; response status, headers and the body as it streams) is recorded,
// so a failure shows exactly what was sent and what the gateway answered.
type wireLog struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	n         int
	exchanges []wireExchange
}

// wireExchange is what the era checks need from one request the inspector sent.
type wireExchange struct {
	httpMethod      string // POST, GET, DELETE
	protocolVersion string // the MCP-Protocol-Version header
	rpcMethod       string // the JSON-RPC method of a POST body
}

func (w *wireLog) record(e wireExchange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exchanges = append(w.exchanges, e)
}

func (w *wireLog) sent() []wireExchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireExchange(nil), w.exchanges...)
}

const wireLogBodyMax = 8 << 10

func (w *wireLog) printf(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(&w.buf, format, args...)
}

func (w *wireLog) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	w.exchanges = nil
}

func (w *wireLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *wireLog) next() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return w.n
}

// teeBody copies what is read from a response body into the wire log, up to wireLogBodyMax.
type teeBody struct {
	io.ReadCloser
	log  *wireLog
	id   int
	seen int
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.seen < wireLogBodyMax {
		chunk := p[:n]
		if room := wireLogBodyMax - b.seen; len(chunk) > room {
			chunk = chunk[:room]
		}
		b.seen += n
		b.log.printf("#%d <<< %s\n", b.id, chunk)
	}
	if err != nil && err != io.EOF {
		b.log.printf("#%d <<< (body read error: %v)\n", b.id, err)
	}
	return n, err
}

func headerLines(h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			if k == "Authorization" && v == "Bearer "+testKey {
				v = "Bearer <testKey>"
			}
			fmt.Fprintf(&b, "  %s: %s\n", k, v)
		}
	}
	return b.String()
}

func startWireProxy(t *testing.T, target string, log *wireLog) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	type idKey struct{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport:     tr,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			id, _ := resp.Request.Context().Value(idKey{}).(int)
			log.printf("#%d <<< %s\n%s", id, resp.Status, headerLines(resp.Header))
			resp.Body = &teeBody{ReadCloser: resp.Body, log: log, id: id}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			id, _ := r.Context().Value(idKey{}).(int)
			log.printf("#%d proxy error: %v\n", id, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := log.next()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		shown := body
		if len(shown) > wireLogBodyMax {
			shown = shown[:wireLogBodyMax]
		}
		log.printf("#%d >>> %s %s\n%s  %s\n", id, r.Method, r.URL.RequestURI(), headerLines(r.Header), shown)
		var rpc struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &rpc)
		log.record(wireExchange{httpMethod: r.Method, protocolVersion: r.Header.Get("MCP-Protocol-Version"), rpcMethod: rpc.Method})
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idKey{}, id)))
	}))
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	return srv.URL
}

// inspectorOutput is what `--format json -q` prints: a result or an error envelope.
type inspectorOutput struct {
	Result *struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// TestInspectorCLI drives the gateway with the MCP Inspector's headless CLI in each protocol era
// it offers (legacy initialize, auto discovery with fallback, modern 2026-07-28): it lists tools
// and calls a tool on a legacy upstream (server-everything) and on a modern one (go-sdk fixture).
func TestInspectorCLI(t *testing.T) {
	node, entry := inspectorCLI(t)
	gw := startGateway(t, fullConfig(t), nil)
	var wire wireLog
	endpoint := startWireProxy(t, gw.url, &wire) + "/mcp"
	home := t.TempDir() // the inspector writes its catalog under $HOME/.mcp-inspector

	run := func(t *testing.T, era string, args ...string) *inspectorOutput {
		t.Helper()
		wire.reset()
		ctx, cancel := context.WithTimeout(context.Background(), inspectorTimeout)
		defer cancel()
		argv := append([]string{entry, "--cli", endpoint,
			"--transport", "http",
			"--protocol-era", era,
			"--header", "Authorization: Bearer " + testKey,
			"--stored-auth-only", // on a 401 fail with auth_required instead of starting OAuth
		}, args...)
		argv = append(argv, "--format", "json", "-q")
		cmd := exec.CommandContext(ctx, node, argv...)
		cmd.Dir = home
		cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		runErr := cmd.Run()
		shown := strings.ReplaceAll(strings.Join(argv[1:], " "), testKey, "<testKey>")
		t.Logf("inspector %s (%s, exit %v)", shown, time.Since(start).Round(time.Millisecond), runErr)
		// Dump everything when this subtest fails, including the caller's own assertions.
		wireText := wire.String()
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s\nwire (inspector <-> gateway):\n%s",
					tsTail(stdout.String(), 16<<10), tsTail(stderr.String(), 16<<10), tsTail(wireText, 64<<10))
			}
		})
		var out inspectorOutput
		line := strings.TrimSpace(stdout.String())
		if line == "" {
			t.Errorf("no result on stdout (exit %v)", runErr)
			return nil
		}
		if err := json.Unmarshal([]byte(line), &out); err != nil {
			t.Errorf("stdout is not one JSON object: %v", err)
			return nil
		}
		if runErr != nil || out.Error != nil || out.Result == nil {
			t.Errorf("inspector failed (exit %v): error %s", runErr, out.Error)
			return nil
		}
		return &out
	}

	// checkEra asserts, from what the inspector sent, that it spoke the era under test: legacy
	// initializes a 2025-11-25 session; auto probes server/discover, which the gateway answers,
	// and then speaks 2026-07-28 like modern, with no initialize.
	checkEra := func(t *testing.T, era, method string) {
		t.Helper()
		sent := wire.sent()
		var rpcs []string
		for _, e := range sent {
			rpcs = append(rpcs, e.rpcMethod)
		}
		i := slices.IndexFunc(sent, func(e wireExchange) bool { return e.rpcMethod == method })
		if i < 0 {
			t.Errorf("%s was not sent (sent %q)", method, rpcs)
			return
		}
		want := tsModernVersion
		if era == "legacy" {
			want = tsLegacyVersion
		}
		if got := sent[i].protocolVersion; got != want {
			t.Errorf("%s sent with MCP-Protocol-Version %q, want %q", method, got, want)
		}
		initialized := slices.Contains(rpcs, "initialize")
		discovered := slices.Contains(rpcs, "server/discover")
		switch era {
		case "legacy":
			if !initialized || discovered {
				t.Errorf("legacy: want initialize and no server/discover, sent %q", rpcs)
			}
		case "auto":
			if !discovered || initialized {
				t.Errorf("auto: want server/discover and no initialize fallback, sent %q", rpcs)
			}
		case "modern":
			if initialized {
				t.Errorf("modern: want no initialize, sent %q", rpcs)
			}
		}
	}

	callText := func(out *inspectorOutput) string {
		var b strings.Builder
		for _, c := range out.Result.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		return b.String()
	}

	// Sequential on purpose: every run spawns node and fans out to the upstreams.
	for _, era := range []string{"legacy", "auto", "modern"} {
		t.Run(era, func(t *testing.T) {
			t.Run("tools/list", func(t *testing.T) {
				out := run(t, era, "--method", "tools/list")
				if out == nil {
					return
				}
				checkEra(t, era, "tools/list")
				names := map[string]bool{}
				for _, tl := range out.Result.Tools {
					names[tl.Name] = true
				}
				for _, want := range []string{"modern_fx-test_simple_text", "everything-echo"} {
					if !names[want] {
						t.Errorf("tools/list: %s missing from %d tools", want, len(names))
					}
				}
				t.Logf("%s: %d tools", era, len(names))
			})
			calls := []struct {
				tool string
				args []string
				want string
			}{
				{"everything-echo", []string{"--tool-arg", "message=hi"}, "Echo: hi"},
				{"modern_fx-test_simple_text", nil, "simple text response"},
			}
			for _, c := range calls {
				t.Run("tools/call "+c.tool, func(t *testing.T) {
					args := append([]string{"--method", "tools/call", "--tool-name", c.tool}, c.args...)
					out := run(t, era, args...)
					if out == nil {
						return
					}
					checkEra(t, era, "tools/call")
					got := callText(out)
					if out.Result.IsError || !strings.Contains(got, c.want) {
						t.Errorf("tools/call %s = %q (isError %v), want it to contain %q", c.tool, got, out.Result.IsError, c.want)
					}
				})
			}
		})
	}
}
