package testpeers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"mcpgw-testpeers","version":"0"}}}`

// initResult is the part of an initialize response the tests look at.
type initResult struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	} `json:"result"`
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 15 * time.Second}
}

// postInitialize sends a legacy initialize to a streamable HTTP endpoint and decodes the answer,
// which may be plain JSON or one SSE message.
func postInitialize(t *testing.T, endpoint string) (initResult, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := newClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	data := body
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = nil
		for ev := range readEvents(context.Background(), strings.NewReader(string(body))) {
			if data == nil {
				data = []byte(ev.data)
			}
		}
	}
	var res initResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("initialize answer %q: %v", body, err)
	}
	return res, resp.Header
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if !strings.HasSuffix(GoFixtureInstallCommand(root), "everything-server@"+GoSDKVersion) {
		t.Errorf("install command %q", GoFixtureInstallCommand(root))
	}
}

func TestGoFixtureHTTP(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			endpoint := StartGoFixtureHTTP(t, stateless)
			res, hdr := postInitialize(t, endpoint)
			if res.Result.ServerInfo.Name != "mcp-conformance-test-server" || res.Result.ProtocolVersion != "2025-11-25" {
				t.Errorf("initialize result %+v", res)
			}
			if sid := hdr.Get("Mcp-Session-Id"); (sid == "") == !stateless {
				t.Errorf("stateless=%v but Mcp-Session-Id = %q", stateless, sid)
			}
		})
	}
}

func TestNodeEverythingStreamableHTTP(t *testing.T) {
	endpoint := StartNodeEverything(t, "streamableHttp")
	if !strings.HasSuffix(endpoint, "/mcp") {
		t.Errorf("endpoint %s", endpoint)
	}
	res, hdr := postInitialize(t, endpoint)
	if res.Result.ServerInfo.Name != "mcp-servers/everything" || hdr.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize result %+v, headers %v", res, hdr)
	}
}

// TestNodeEverythingSSE drives the legacy transport by hand: open the stream, read the endpoint
// event, POST initialize there, read the answer from the stream.
func TestNodeEverythingSSE(t *testing.T) {
	streamURL := StartNodeEverything(t, "sse")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", streamURL, nil)
	req.Header.Set("Accept", "text/event-stream")
	client := newClient()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := readEvents(ctx, resp.Body)

	ev, ok := <-events
	if !ok || ev.name != "endpoint" {
		t.Fatalf("first event = %+v", ev)
	}
	base, _ := url.Parse(streamURL)
	postURL, err := base.Parse(ev.data)
	if err != nil {
		t.Fatal(err)
	}
	post, err := client.Post(postURL.String(), "application/json", strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusAccepted {
		t.Fatalf("POST %s = %d", postURL, post.StatusCode)
	}
	for ev := range events {
		if ev.name != "message" {
			continue
		}
		var res initResult
		if err := json.Unmarshal([]byte(ev.data), &res); err != nil || string(res.ID) != "1" {
			continue
		}
		if res.Result.ServerInfo.Name != "mcp-servers/everything" {
			t.Errorf("initialize result %+v", res)
		}
		return
	}
	t.Fatal("no initialize answer on the SSE stream")
}

// sseEvent is one server-sent event (single-line data is enough here).
type sseEvent struct{ name, data string }

// readEvents parses events with data from r until r ends or ctx is done; the channel closes then.
func readEvents(ctx context.Context, r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" {
					select {
					case ch <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event:"):
				ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				ev.data = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return ch
}

// TestStdioPeers runs every peer over stdio and reads its initialize answer.
func TestStdioPeers(t *testing.T) {
	for name, argv := range map[string][]string{
		"go-sdk fixture":             {GoFixture(t)},
		"server-everything":          append(NodeEverything(t), "stdio"),
		"server-filesystem":          append(NodeServer(t, "server-filesystem"), t.TempDir()),
		"server-memory":              NodeServer(t, "server-memory"),
		"server-sequential-thinking": NodeServer(t, "server-sequential-thinking"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Keep stdin open until the answer is read: a server may stop at EOF before answering.
			_, _ = io.WriteString(stdin, initialize+"\n")
			out, _ := bufio.NewReader(stdout).ReadString('\n')
			stdin.Close()
			_ = cmd.Wait()
			var res initResult
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Result.ServerInfo.Name == "" {
				t.Errorf("answer %q: %v", out, err)
			}
		})
	}
}
