package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/redisconn"
	"github.com/mcpgw/mcpgw/internal/redistest"
)

// TestSharedGateFallsBackAndRecovers: two gates (two replicas) on one Redis share a limit; with
// Redis stopped, one failing open decides locally and counts it, one failing closed refuses;
// with Redis back they share the limit again, without being rebuilt.
func TestSharedGateFallsBackAndRecovers(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	gate := func(mode config.RedisFailureMode) *sharedGate {
		c, err := redisconn.New(redisconn.Settings{URL: srv.URL(), CommandTimeout: 300 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := newSharedGate(c, mode, limits.RedisOptions{Prefix: prefix})
		t.Cleanup(func() { g.close(); _ = c.Close() })
		return g
	}
	open, closed := gate(config.RedisFailOpen), gate(config.RedisFailClosed)
	ctx := context.Background()
	one := func(key string) []limits.Check { return []limits.Check{{Key: key, Limit: 1, Window: time.Minute}} }
	admitted := func(g *sharedGate, key string) bool {
		t.Helper()
		a, err := g.Admit(ctx, one(key), time.Now())
		if err != nil {
			t.Fatalf("admit %s: %v", key, err)
		}
		return a.Allowed()
	}
	if !admitted(open, "a") || admitted(closed, "a") {
		t.Fatal("the two gates do not share one limit")
	}

	srv.Stop()
	if !admitted(open, "b") || admitted(open, "b") {
		t.Fatal("failing open, the gate does not count locally")
	}
	if _, err := closed.Admit(ctx, one("b"), time.Now()); !errors.Is(err, errLimitsUnavailable) {
		t.Fatalf("failing closed: %v, want errLimitsUnavailable", err)
	}
	if s := open.status(); !strings.Contains(s, "2 calls decided without redis") || !strings.Contains(s, "open") {
		t.Fatalf("status %q", s)
	}

	srv.Restart()
	time.Sleep(redisconn.RetryEvery + 100*time.Millisecond)
	if !admitted(open, "c") || admitted(closed, "c") {
		t.Fatal("after Redis came back the gates do not share the limit again")
	}
	if !open.conn.Health().Up || !closed.conn.Health().Up {
		t.Fatal("a gate still counts Redis as down")
	}
}

// A Redis that answers but cannot decide (here the counter's key holds
// another type, as a foreign writer to the same Redis would leave it) checks
// no limit: failing closed refuses, failing open lets the call go ahead with
// the error, and Redis is not taken for unreachable.
func TestSharedGateClosedRefusesWhenRedisCannotDecide(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.New(redisconn.Settings{URL: srv.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	prefix := redistest.Prefix(t)
	if err := c.Client().Set(ctx, prefix+"w:odd", "not a window", 0).Err(); err != nil {
		t.Fatal(err)
	}
	check := []limits.Check{{Key: "odd", Limit: 1, Window: time.Minute}}
	closed := newSharedGate(c, config.RedisFailClosed, limits.RedisOptions{Prefix: prefix})
	open := newSharedGate(c, config.RedisFailOpen, limits.RedisOptions{Prefix: prefix})
	t.Cleanup(func() { closed.close(); open.close() })
	if _, err := closed.Admit(ctx, check, time.Now()); !errors.Is(err, errLimitsUnavailable) {
		t.Fatalf("failing closed with Redis unable to decide: %v, want errLimitsUnavailable", err)
	}
	if _, err := open.Admit(ctx, check, time.Now()); err == nil || errors.Is(err, errLimitsUnavailable) {
		t.Fatalf("failing open with Redis unable to decide: %v, want Redis's error", err)
	}
	if !c.Health().Up {
		t.Fatal("an answering Redis was taken for unreachable")
	}
}
