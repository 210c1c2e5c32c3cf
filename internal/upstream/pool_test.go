package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

func TestCredentialDigest(t *testing.T) {
	cases := []struct {
		name string
		a, b http.Header
		same bool
	}{
		{"different values under a non-canonical key", http.Header{"x-user-token": {"alice"}}, http.Header{"x-user-token": {"bob"}}, false},
		{"same value, key spelled differently", http.Header{"x-user-token": {"alice"}}, http.Header{"X-User-Token": {"alice"}}, true},
		{"case duplicates with swapped values", http.Header{"x-t": {"1"}, "X-T": {"2"}}, http.Header{"x-t": {"2"}, "X-T": {"1"}}, false},
		{"one list against case duplicates", http.Header{"X-T": {"1", "2"}}, http.Header{"X-T": {"1"}, "x-t": {"2"}}, false},
		{"same value under different names", http.Header{"X-A": {"1"}}, http.Header{"X-B": {"1"}}, false},
		{"nil and empty", nil, http.Header{}, true},
		{"empty value and no header", http.Header{"X-A": {""}}, http.Header{}, false},
	}
	for _, tc := range cases {
		if got := credentialDigest(tc.a, "") == credentialDigest(tc.b, ""); got != tc.same {
			t.Errorf("%s: same digest = %v, want %v", tc.name, got, tc.same)
		}
	}
	if credentialDigest(nil, "a") == credentialDigest(nil, "b") {
		t.Error("different tokens share a digest")
	}
}

func TestNonCanonicalCredentialHeadersGetOwnSessions(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, toolsPage(m.ID, "a"))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	for _, who := range []string{"alice", "bob", "alice", "bob"} {
		// A forwarded header map built by hand, with a lower-case key.
		if _, err := c.ListTools(context.Background(), Options{Header: http.Header{"x-user-token": {who}}}); err != nil {
			t.Fatal(err)
		}
	}
	inits := map[string]int{}
	sessionOf := map[string]string{}
	for _, s := range f.requests() {
		who := s.Header.Get("X-User-Token")
		switch s.Method {
		case "initialize":
			inits[who]++
		case "tools/list":
			if prev, ok := sessionOf[who]; ok && prev != s.Session {
				t.Fatalf("%s used sessions %s and %s", who, prev, s.Session)
			}
			sessionOf[who] = s.Session
		}
	}
	if inits["alice"] != 1 || inits["bob"] != 1 {
		t.Fatalf("initialize per caller = %v, want one each", inits)
	}
	if sessionOf["alice"] == sessionOf["bob"] {
		t.Fatalf("two callers shared session %s", sessionOf["alice"])
	}
}

// slowInit serves a legacy upstream whose initialize answers after delay
// (or when release is closed, if delay is 0), minting s1, s2, … for the
// initializes it does answer. Each initialize that arrives is signalled on
// reached.
func slowInit(t *testing.T, delay time.Duration, release <-chan struct{}, reached chan<- struct{}) *fakeUpstream {
	var n atomic.Int32
	return newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Method == "initialize":
			reached <- struct{}{}
			var wait <-chan time.Time
			if delay > 0 {
				wait = time.After(delay)
			}
			select {
			case <-r.Context().Done():
				return // the client gave up: no session
			case <-wait:
			case <-release:
			}
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", n.Add(1)))
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, initResult("2025-11-25")))
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(http.StatusAccepted)
		default:
			writeJSON(w, 200, toolsPage(m.ID, "a"))
		}
	})
}

func deletes(f *fakeUpstream) []string {
	var out []string
	for _, s := range f.requests() {
		if s.HTTPMethod == http.MethodDelete {
			out = append(out, s.Session)
		}
	}
	return out
}

// A caller whose setup fails on its own deadline must not spoil the session
// of a caller that was waiting for that setup: the waiter gets a session of
// its own, which stays pooled and is ended by Close.
func TestFailedSetupLeavesTheWaitersSessionPooled(t *testing.T) {
	reached := make(chan struct{}, 4)
	f := slowInit(t, 400*time.Millisecond, nil, reached)
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	errA := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.ListTools(ctx, Options{})
		errA <- err
	}()
	<-reached // A's initialize is in flight; B queues behind it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.ListTools(ctx, Options{}); err != nil {
		t.Fatalf("B: %v", err)
	}
	if err := <-errA; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("A: err = %v, want its own deadline", err)
	}
	if d := deletes(f); len(d) != 0 {
		t.Fatalf("B's session was ended while in use: DELETEs %v", d)
	}
	if _, err := c.ListTools(ctx, Options{}); err != nil { // reuses B's session
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"initialize None", "initialize None", "tools/list s1", "tools/list s1"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if d := deletes(f); !slices.Equal(d, []string{"s1"}) {
		t.Fatalf("DELETEs = %v, want exactly one for s1, from Close", d)
	}
}

// A caller waiting for another caller's setup gives up on its own deadline,
// and its giving up does not disturb that setup.
func TestSetupWaiterHonoursItsOwnDeadline(t *testing.T) {
	release := make(chan struct{})
	reached := make(chan struct{}, 4)
	f := slowInit(t, 0, release, reached)
	// Never deadlock the test against a client that ignores the waiter's
	// deadline: let the handshake finish after 3s regardless.
	timer := time.AfterFunc(3*time.Second, func() { close(release) })
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	errA := make(chan error, 1)
	go func() {
		_, err := c.ListTools(context.Background(), Options{})
		errA <- err
	}()
	<-reached
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ListTools(ctx, Options{})
	elapsed := time.Since(start)
	if timer.Stop() {
		close(release)
	}
	if !errors.Is(err, context.DeadlineExceeded) || elapsed > time.Second {
		t.Fatalf("waiter: err = %v after %s, want its own 100ms deadline", err, elapsed)
	}
	if err := <-errA; err != nil {
		t.Fatalf("the setup the waiter gave up on failed: %v", err)
	}
	if got, want := f.calls(), []string{"initialize None", "tools/list s1"}; !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
}

// A session looked up before Close but set up after it is never started.
func TestSessionFromBeforeCloseIsNotSetUp(t *testing.T) {
	f := legacyServer(t, "2025-11-25", func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		writeJSON(w, 200, toolsPage(m.ID))
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	s, _, err := c.lookup(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.setup(context.Background()); !errors.Is(err, errSessionGone) {
		t.Fatalf("setup after Close: %v, want errSessionGone", err)
	}
	if s.transport() != nil || len(f.requests()) != 0 {
		t.Fatalf("a session from before Close was started after it (%d requests)", len(f.requests()))
	}
}

// Close while a handshake is pending aborts it: nothing is left pooled or
// running, and the waiting caller learns the client is closed.
func TestCloseDuringHTTPSetup(t *testing.T) {
	reached := make(chan struct{}, 4)
	f := slowInit(t, 0, nil, reached) // never answers on its own
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25", RequestTimeout: 3 * time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := c.ListTools(context.Background(), Options{})
		done <- err
	}()
	<-reached
	start := time.Now()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("Close waited %s for a pending handshake", elapsed)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	c.mu.Lock()
	n := len(c.sessions)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d sessions pooled after Close", n)
	}
}

// An ephemeral walk is one conversation: one initialize, every page (and the
// capability check) on its session, one DELETE; nothing is pooled.
func TestEphemeralWalkUsesOneSession(t *testing.T) {
	var n atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
		switch {
		case m.Kind() != jsonrpc.KindRequest:
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s%d", n.Add(1)))
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{}},"serverInfo":{"name":"f","version":"1"}}`)))
		default:
			key := "tools"
			if m.Method == "prompts/list" {
				key = "prompts"
			}
			page := `{"` + key + `":[{"name":"a"}],"nextCursor":"p2"}`
			if jsonrpc.Member(m.Params, "cursor") != nil {
				page = `{"` + key + `":[{"name":"b"}]}`
			}
			writeJSON(w, 200, jsonrpc.EncodeResult(m.ID, json.RawMessage(page)))
		}
	})
	c := newClient(t, Config{Name: "up", URL: f.url(), ProtocolVersion: "2025-11-25"})
	ctx := context.Background()
	eph := Options{Ephemeral: true, Header: http.Header{"Authorization": {"Bearer caller"}}}
	if tools, err := c.ListTools(ctx, eph); err != nil || len(tools) != 2 {
		t.Fatalf("tools=%s err=%v", tools, err)
	}
	if prompts, err := c.ListPrompts(ctx, eph); err != nil || len(prompts) != 2 {
		t.Fatalf("prompts=%s err=%v", prompts, err)
	}
	if info, err := c.Info(ctx, eph); err != nil || info.ServerInfo.Name != "f" {
		t.Fatalf("info=%+v err=%v", info, err)
	}
	want := []string{"initialize None", "tools/list s1", "tools/list s1", "initialize None", "prompts/list s2", "prompts/list s2", "initialize None"}
	if got := f.calls(); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if d := deletes(f); !slices.Equal(d, []string{"s1", "s2", "s3"}) {
		t.Fatalf("DELETEs = %v, want one per walk and one for Info", d)
	}
	c.mu.Lock()
	pooled := len(c.sessions)
	c.mu.Unlock()
	if pooled != 0 {
		t.Fatalf("%d sessions pooled by ephemeral operations", pooled)
	}
}

// Finding a pooled session allocates nothing: its key is built on the
// stack, for a legacy caller of an auto stdio upstream (a key of its own,
// prefixed) as for any other caller.
func TestLookupOfAPooledSessionAllocatesNothing(t *testing.T) {
	c := newClient(t, Config{Name: "up", Transport: TransportStdio, Command: "/bin/true"})
	held := map[bool]*session{}
	for _, legacy := range []bool{false, true} {
		opts := Options{LegacyCaller: legacy}
		s, created, err := c.lookup(opts) // held: the runs below find it in use
		if err != nil || !created {
			t.Fatalf("first lookup: created %v, %v", created, err)
		}
		held[legacy] = s
		allocs := allocstest.Least(100, func() {
			s, created, err := c.lookup(opts)
			if err != nil || created || s != held[legacy] {
				t.Fatalf("lookup: created %v, %v, same session %v", created, err, s == held[legacy])
			}
			c.unuse(s)
		})
		if allocs != 0 {
			t.Errorf("legacy caller %v: %v allocations per lookup, want 0", legacy, allocs)
		}
	}
	if held[false] == held[true] {
		t.Fatal("a legacy caller shares the modern caller's session")
	}
	for _, s := range held {
		c.unuse(s)
	}
}
