package limits_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/limits/limitstest"
	"github.com/mcpgw/mcpgw/internal/redistest"
)

// redisClient is a client of the test Redis, closed at cleanup.
func redisClient(t *testing.T) *redis.Client { return redisClientOf(t, redistest.URL(t)) }

// redisClientOf is a client of the Redis at url, closed at cleanup.
func redisClientOf(t *testing.T, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newRedisGate is a Redis gate on the test Redis with keys of its own,
// deciding by the caller's clock (the suites give times).
func newRedisGate(t *testing.T, c *redis.Client, o limits.RedisOptions) *limits.Redis {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = redistest.Prefix(t)
	}
	g := limits.NewRedis(c, o)
	t.Cleanup(g.Close)
	return g
}

func TestRedisCounterConformance(t *testing.T) {
	c := redisClient(t)
	limitstest.Run(t, func(t *testing.T) limits.Counter {
		return newRedisGate(t, c, limits.RedisOptions{CallerClock: true})
	})
}

func TestRedisGateConformance(t *testing.T) {
	c := redisClient(t)
	limitstest.RunGate(t, func(t *testing.T) limits.Gate {
		return newRedisGate(t, c, limits.RedisOptions{CallerClock: true})
	})
}

// TestRedisReplicasShareOneWindow: three gates (three replicas, each with its
// own client) on one prefix, by the server's clock, 90 requests at once
// against 10 per minute: exactly 10 admitted between them.
func TestRedisReplicasShareOneWindow(t *testing.T) {
	prefix, url := redistest.Prefix(t), redistest.URL(t)
	var gates []*limits.Redis
	for range 3 {
		gates = append(gates, newRedisGate(t, redisClientOf(t, url), limits.RedisOptions{Prefix: prefix}))
	}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 90 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := gates[i%3].Admit(context.Background(), []limits.Check{{Key: "server\x00s", Limit: 10, Window: time.Minute}}, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			if a.Allowed() {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 10 {
		t.Fatalf("%d admitted across 3 replicas, want exactly 10", n)
	}
}

// TestRedisSlotLeases: a slot whose holder stops renewing (a replica that
// died) is free once its lease ends; one whose holder renews is kept past
// its lease.
func TestRedisSlotLeases(t *testing.T) {
	c := redisClient(t)
	prefix := redistest.Prefix(t)
	const lease = 300 * time.Millisecond
	dead := limits.NewRedis(c, limits.RedisOptions{Prefix: prefix, Lease: lease})
	alive := newRedisGate(t, c, limits.RedisOptions{Prefix: prefix, Lease: lease})
	check := []limits.Check{{Key: "dead", Limit: 1}}
	if a, err := dead.Admit(context.Background(), check, time.Now()); err != nil || !a.Allowed() {
		t.Fatalf("first slot: %v %v", a, err)
	}
	dead.Close() // the replica dies holding its slot: no release, no renewal
	if a, _ := alive.Admit(context.Background(), check, time.Now()); a.Allowed() {
		t.Fatal("the dead replica's slot was free before its lease ended")
	}
	time.Sleep(lease + 100*time.Millisecond)
	if a, err := alive.Admit(context.Background(), check, time.Now()); err != nil || !a.Allowed() {
		t.Fatalf("the dead replica's slot is still held after its lease: %v %v", a, err)
	}
	// alive now holds it and renews it every lease/3.
	time.Sleep(3 * lease)
	if a, _ := alive.Admit(context.Background(), check, time.Now()); a.Allowed() {
		t.Fatal("a renewed slot was freed by its first lease")
	}
}

// TestRedisWindowBoundary: by the server's clock, a request leaves the window
// exactly one window after it was admitted.
func TestRedisWindowBoundary(t *testing.T) {
	g := newRedisGate(t, redisClient(t), limits.RedisOptions{})
	check := []limits.Check{{Key: "w", Limit: 2, Window: 400 * time.Millisecond}}
	for range 2 {
		if a, err := g.Admit(context.Background(), check, time.Now()); err != nil || !a.Allowed() {
			t.Fatal("refused under the limit", err)
		}
	}
	a, err := g.Admit(context.Background(), check, time.Now())
	if err != nil || a.Allowed() || a.RetryAfter <= 0 || a.RetryAfter > 400*time.Millisecond {
		t.Fatalf("third within the window: %+v %v", a, err)
	}
	time.Sleep(a.RetryAfter + 20*time.Millisecond)
	if a, err := g.Admit(context.Background(), check, time.Now()); err != nil || !a.Allowed() {
		t.Fatalf("refused after RetryAfter: %+v %v", a, err)
	}
}
