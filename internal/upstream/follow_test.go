package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// sdkPeer is a go-sdk library server over real HTTP that counts the GET
// requests open on it (a streamable HTTP session's GET stream, or an
// HTTP+SSE connection).
type sdkPeer struct {
	srv    *sdk.Server
	http   *httptest.Server
	gets   atomic.Int32
	posted atomic.Int32  // POSTs answered
	gate   chan struct{} // the "slow" tool waits for it
}

// newSDKPeer serves a go-sdk server with the tools "echo" and "slow" over
// streamable HTTP (stateful sessions) or, with sse, over HTTP+SSE.
func newSDKPeer(t *testing.T, sse bool) *sdkPeer {
	p := &sdkPeer{gate: make(chan struct{})}
	p.srv = sdk.NewServer(&sdk.Implementation{Name: "follow-peer", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	p.srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("echo"), nil
	})
	p.srv.AddTool(&sdk.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-p.gate:
		case <-ctx.Done():
		}
		return text("slow"), nil
	})
	var h http.Handler
	get := func(*http.Request) *sdk.Server { return p.srv }
	if sse {
		h = sdk.NewSSEHandler(get, nil)
	} else {
		h = sdk.NewStreamableHTTPHandler(get, nil)
	}
	p.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			p.gets.Add(1)
			defer p.gets.Add(-1)
		}
		h.ServeHTTP(w, r)
		if r.Method == http.MethodPost {
			p.posted.Add(1)
		}
	}))
	t.Cleanup(p.http.Close)
	return p
}

// change adds a tool, so the server sends notifications/tools/list_changed
// to its legacy sessions.
func (p *sdkPeer) change(name string) {
	p.srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	})
}

// notes collects what a client hands to Config.OnNotification.
type notes struct {
	mu  sync.Mutex
	got []string
}

func (n *notes) add(_, method string, _ json.RawMessage) {
	n.mu.Lock()
	n.got = append(n.got, method)
	n.mu.Unlock()
}

func (n *notes) count(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.got {
		if m == method {
			c++
		}
	}
	return c
}

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

// stays checks that cond holds for all of d.
func stays(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !cond() {
			t.Fatal(what)
		}
	}
}

// A 2025-11-25 streamable HTTP session opens its GET stream only for
// followers: none after the handshake and plain calls, one for any number
// of followers, closed within 3 s after the last follower left; the
// session stays usable, and a later follower opens the stream again.
func TestFollowHoldsTheGETStream(t *testing.T) {
	p := newSDKPeer(t, false)
	var n notes
	c := newClient(t, Config{Name: "up", URL: p.http.URL, ProtocolVersion: "2025-11-25", OnNotification: n.add})
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	stays(t, 300*time.Millisecond, "a GET stream was opened with no follower", func() bool { return p.gets.Load() == 0 })

	fctx1, release1, err := c.FollowContext(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "no GET stream for the follower", func() bool { return p.gets.Load() == 1 })
	_, release2, err := c.FollowContext(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.change("added")
	waitFor(t, 5*time.Second, "the list change did not arrive on the GET stream", func() bool {
		return n.count(mcp.NotifToolsListChanged) == 1
	})
	if got := p.gets.Load(); got != 1 {
		t.Fatalf("%d GET streams for two followers of one session, want 1", got)
	}
	release1()
	if fctx1.Err() == nil {
		t.Fatal("a released follow's context is still live")
	}
	stays(t, streamLinger+500*time.Millisecond, "the GET stream closed while a follower remained", func() bool { return p.gets.Load() == 1 })
	release2()
	waitFor(t, 3*time.Second, "the GET stream outlived its last follower", func() bool { return p.gets.Load() == 0 })

	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatalf("the session after its followers left: %v", err)
	}
	_, release3, err := c.FollowContext(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "a new follower did not reopen the GET stream", func() bool { return p.gets.Load() == 1 })
	p.change("again")
	waitFor(t, 5*time.Second, "the second list change did not arrive", func() bool {
		return n.count(mcp.NotifToolsListChanged) == 2
	})
	release3()
	waitFor(t, 3*time.Second, "the reopened GET stream outlived its follower", func() bool { return p.gets.Load() == 0 })
}

// Closing the client ends every follow and leaves no GET stream open.
func TestFollowEndsWithTheClient(t *testing.T) {
	p := newSDKPeer(t, false)
	c, err := New(Config{Name: "up", URL: p.http.URL, ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	waitFor(t, 3*time.Second, "no GET stream for the follower", func() bool { return p.gets.Load() == 1 })
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(fctx), ErrFollowEnded) {
		t.Fatalf("follow after Close: cause %v, want ErrFollowEnded", context.Cause(fctx))
	}
	waitFor(t, 3*time.Second, "a GET stream survived Close", func() bool { return p.gets.Load() == 0 })
}

// Over HTTP+SSE the connection is the session: a followed session is ended
// when its last follower leaves and no call is in flight (never under a
// call), and the next call opens a new one.
func TestFollowEndsTheSSEConnection(t *testing.T) {
	p := newSDKPeer(t, true)
	var n notes
	c := newClient(t, Config{Name: "up", URL: p.http.URL, Transport: TransportSSE, ProtocolVersion: "2025-11-25", OnNotification: n.add})
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	if got := p.gets.Load(); got != 1 {
		t.Fatalf("%d SSE connections after a call, want the session's 1", got)
	}
	_, release, err := c.FollowContext(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.change("added")
	waitFor(t, 5*time.Second, "the list change did not arrive on the SSE stream", func() bool {
		return n.count(mcp.NotifToolsListChanged) == 1
	})
	if got := p.gets.Load(); got != 1 {
		t.Fatalf("%d SSE connections for a follower, want 1", got)
	}

	// The last follower leaves while a call is in flight: the call keeps
	// the connection and completes; then it closes.
	called := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", json.RawMessage(`{}`), Options{})
		called <- err
	}()
	waitFor(t, 3*time.Second, "the slow call never reached the upstream", func() bool { return p.posted.Load() >= 4 })
	release()
	stays(t, 500*time.Millisecond, "the SSE connection closed under a call in flight", func() bool { return p.gets.Load() == 1 })
	close(p.gate)
	if err := <-called; err != nil {
		t.Fatalf("a call in flight when the last follower left: %v", err)
	}
	waitFor(t, 3*time.Second, "the SSE connection outlived its last follower and call", func() bool { return p.gets.Load() == 0 })

	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatalf("a call after the connection closed: %v", err)
	}
	if got := p.gets.Load(); got != 1 {
		t.Fatalf("%d SSE connections for the new session, want 1", got)
	}
}

// A follow of an HTTP+SSE session ends (ErrFollowEnded) when the connection
// drops: the notifications it carried are gone.
func TestFollowEndsWhenTheSSEConnectionDrops(t *testing.T) {
	p := newSDKPeer(t, true)
	c := newClient(t, Config{Name: "up", URL: p.http.URL, Transport: TransportSSE, ProtocolVersion: "2025-11-25"})
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	p.http.CloseClientConnections()
	select {
	case <-fctx.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the follow outlived its connection")
	}
	if !errors.Is(context.Cause(fctx), ErrFollowEnded) {
		t.Fatalf("cause %v, want ErrFollowEnded", context.Cause(fctx))
	}
}

// A follow whose GET stream fails to open (here a 503) is refused, not
// acknowledged deaf: FollowContext fails with ErrFollowEnded carrying the
// failure, and the next follow opens the stream and hears a list change.
func TestFollowRefusedWhenTheGETStreamFails(t *testing.T) {
	p := newSDKPeer(t, false)
	var failed atomic.Bool
	inner := p.http.Config.Handler
	p.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && failed.CompareAndSwap(false, true) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, r)
	})
	var n notes
	c := newClient(t, Config{Name: "up", URL: p.http.URL, ProtocolVersion: "2025-11-25", OnNotification: n.add})
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "echo", json.RawMessage(`{}`), Options{}); err != nil {
		t.Fatal(err)
	}
	fctx, release, err := c.FollowContext(ctx, Options{})
	if err == nil {
		release()
		t.Fatalf("a follow whose GET stream was answered 503 was established (live=%v)", fctx.Err() == nil)
	}
	var se *StatusError
	if !errors.Is(err, ErrFollowEnded) || !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want ErrFollowEnded carrying the 503", err)
	}
	fctx, release, err = c.FollowContext(ctx, Options{})
	if err != nil {
		t.Fatalf("a follow after the failed GET: %v", err)
	}
	defer release()
	waitFor(t, 3*time.Second, "no GET stream for the second follower", func() bool { return p.gets.Load() == 1 })
	p.change("added")
	waitFor(t, 5*time.Second, "the list change did not reach the second follower", func() bool {
		return n.count(mcp.NotifToolsListChanged) == 1
	})
	if fctx.Err() != nil {
		t.Fatalf("the follow ended: %v", context.Cause(fctx))
	}
}

// A follow of a session whose upstream offers no GET stream (405) is
// established without one: the upstream sends nothing outside requests
// there, so there is no channel to lose, and the GET is not asked again.
func TestFollowWithoutAGETStream(t *testing.T) {
	p := newSDKPeer(t, false)
	var asked atomic.Int32
	inner := p.http.Config.Handler
	p.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			asked.Add(1)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		inner.ServeHTTP(w, r)
	})
	c := newClient(t, Config{Name: "up", URL: p.http.URL, ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		fctx, release, err := c.FollowContext(ctx, Options{})
		if err != nil {
			t.Fatalf("follow %d of a session without a GET stream: %v", i, err)
		}
		stays(t, 300*time.Millisecond, "the follow ended", func() bool { return fctx.Err() == nil })
		release()
	}
	if got := asked.Load(); got != 1 {
		t.Fatalf("the GET was asked %d times, want once", got)
	}
}

// A follow of a streamable HTTP session ends (ErrFollowEnded) when its GET
// stream, once open, is ended by the upstream: it would hear nothing more.
func TestFollowEndsWhenTheGETStreamDrops(t *testing.T) {
	p := newSDKPeer(t, false)
	c := newClient(t, Config{Name: "up", URL: p.http.URL, ProtocolVersion: "2025-11-25"})
	fctx, release, err := c.FollowContext(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	waitFor(t, 3*time.Second, "no GET stream for the follower", func() bool { return p.gets.Load() == 1 })
	p.http.CloseClientConnections()
	select {
	case <-fctx.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the follow outlived its GET stream")
	}
	if !errors.Is(context.Cause(fctx), ErrFollowEnded) {
		t.Fatalf("cause %v, want ErrFollowEnded", context.Cause(fctx))
	}
}
