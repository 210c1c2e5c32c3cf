package redisconn_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpgw/mcpgw/internal/redisconn"
	"github.com/mcpgw/mcpgw/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOptions checks what each settings form connects to, and that no error quotes a secret.
func TestOptions(t *testing.T) {
	good := []struct {
		name     string
		s        redisconn.Settings
		addr     string
		user, pw string
		db       int
		tls      bool
	}{
		{"url", redisconn.Settings{URL: "redis://u:pw@10.0.0.1:6380/2"}, "10.0.0.1:6380", "u", "pw", 2, false},
		{"rediss", redisconn.Settings{URL: "rediss://:pw@cache.example:6390"}, "cache.example:6390", "", "pw", 0, true},
		{"url default port", redisconn.Settings{URL: "redis://cache"}, "cache:6379", "", "", 0, false},
		{"url without password takes it apart", redisconn.Settings{URL: "redis://cache:1", Username: "a", Password: "p"}, "cache:1", "a", "p", 0, false},
		{"url wins over host", redisconn.Settings{URL: "redis://one:1", Host: "two", Port: 2}, "one:1", "", "", 0, false},
		{"host", redisconn.Settings{Host: "h", Port: 7000, Password: "p"}, "h:7000", "", "p", 0, false},
		{"host default port and tls", redisconn.Settings{Host: "h", TLS: true}, "h:6379", "", "", 0, true},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.s.Options()
			if err != nil {
				t.Fatal(err)
			}
			if o.Addr != tc.addr || o.Username != tc.user || o.Password != tc.pw || o.DB != tc.db || (o.TLSConfig != nil) != tc.tls {
				t.Errorf("got addr %s user %q password %q db %d tls %v", o.Addr, o.Username, o.Password, o.DB, o.TLSConfig != nil)
			}
			if o.PoolSize != redisconn.DefaultPoolSize || o.MaxActiveConns != redisconn.DefaultMaxActiveConns ||
				o.ReadTimeout != redisconn.DefaultCommandTimeout || o.DialTimeout != redisconn.DefaultDialTimeout {
				t.Errorf("bounds not set: %+v", o)
			}
		})
	}
	bad := []redisconn.Settings{
		{URL: "http://u:s3cret@h:1"},
		{URL: "redis://u:s3cret@h:port"},
		{URL: "redis://u:s3cret@h:1/notadb"},
		{URL: "redis://u:s3cret@h:1/%zz"},
		{URL: "s3cret"},
		{Host: "u:s3cret@h"},
		{Host: "h", Port: 70000, Password: "s3cret"},
		{},
	}
	for _, s := range bad {
		_, err := s.Options()
		if err == nil {
			t.Errorf("%+v: no error", s.Host)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHealthFollowsTheServer stops and restarts a real redis-server: the Conn is down with the
// error after the first failed command, logs one WARN for the whole outage however many
// commands fail, and is up again (one INFO) once the server answers, without a new client.
func TestHealthFollowsTheServer(t *testing.T) {
	srv := redistest.Start(t)
	var logs syncBuffer
	c, err := redisconn.New(redisconn.Settings{URL: srv.URL(), CommandTimeout: 200 * time.Millisecond},
		slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if h := c.Health(); !h.Up || h.Outages != 0 {
		t.Fatalf("health %+v, want up", h)
	}
	srv.Stop()
	for range 5 {
		if err := c.Ping(ctx); err == nil {
			t.Fatal("ping succeeded with the server stopped")
		}
	}
	h := c.Health()
	if h.Up || h.Outages != 1 || h.LastError == "" {
		t.Fatalf("health %+v, want down after one outage with its error", h)
	}
	if n := strings.Count(logs.String(), `"level":"WARN"`); n != 1 {
		t.Fatalf("%d WARN lines for one outage, want 1:\n%s", n, logs.String())
	}
	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("still down after the restart: %+v", c.Health())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h := c.Health(); !h.Up || h.Outages != 1 {
		t.Fatalf("health %+v, want up", h)
	}
	if n := strings.Count(logs.String(), "redis reachable again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1:\n%s", n, logs.String())
	}
}

// TestUnavailable separates outages from answers.
func TestUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.New(redisconn.Settings{URL: srv.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	err = c.Client().Eval(ctx, "return redis.call('NOSUCHCOMMAND')", nil).Err()
	if err == nil || redisconn.Unavailable(err) {
		t.Fatalf("a script error (%v) is an answer, not an outage", err)
	}
	if c.Observe(err); !c.Health().Up {
		t.Fatal("an answer marked Redis down")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Client().Ping(cctx).Err(); redisconn.Unavailable(err) {
		t.Fatalf("a cancelled caller (%v) is not an outage", err)
	}
}

// TestTryLetsOneCommandThroughPerRetryEvery: while up every command goes; once a command finds
// Redis unreachable, none goes until RetryEvery has passed, then exactly one among concurrent
// callers; an answer lets every command through again.
func TestTryLetsOneCommandThroughPerRetryEvery(t *testing.T) {
	c, err := redisconn.New(redisconn.Settings{URL: "redis://127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Try() || !c.Try() {
		t.Fatal("Try refuses while Redis counts as up")
	}
	c.Observe(errors.New("dial tcp 127.0.0.1:1: connection refused"))
	if c.Try() {
		t.Fatal("Try lets a command through at once after the outage began")
	}
	time.Sleep(redisconn.RetryEvery + 50*time.Millisecond)
	var through atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if c.Try() {
				through.Add(1)
			}
		})
	}
	wg.Wait()
	if through.Load() != 1 {
		t.Fatalf("%d commands let through after RetryEvery, want 1", through.Load())
	}
	c.Observe(nil)
	if !c.Try() || !c.Try() {
		t.Fatal("Try refuses after Redis answered again")
	}
}
