package limits_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/allocstest"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/limits/limitstest"
)

func TestMemoryConformance(t *testing.T) {
	limitstest.Run(t, func(*testing.T) limits.Counter { return limits.NewMemory(0) })
}

// A new key beyond the bound evicts the least recently used one, which
// forgets its count; the others keep theirs.
func TestMemoryEvictsLeastRecentlyUsed(t *testing.T) {
	m := limits.NewMemory(2)
	ctx, now := context.Background(), time.Now()
	take := func(key string) bool {
		d, err := m.Take(ctx, key, 1, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	}
	if !take("a") || !take("b") {
		t.Fatal("first takes refused")
	}
	if take("a") { // a is now the most recently used
		t.Fatal("a allowed twice")
	}
	if !take("c") { // evicts b
		t.Fatal("c refused")
	}
	if take("a") || take("c") {
		t.Fatal("a or c forgot its count")
	}
	if !take("b") { // b was forgotten; evicts a
		t.Fatal("evicted b still counted")
	}
	if !take("a") {
		t.Fatal("evicted a still counted")
	}
}

// Clocks read before the lock may arrive out of order; a time earlier than
// the last one recorded still counts and never shortens anyone's window.
func TestMemoryOutOfOrderTimes(t *testing.T) {
	m := limits.NewMemory(0)
	ctx, base := context.Background(), time.Now()
	for _, at := range []time.Duration{time.Second, 0} {
		if d, _ := m.Take(ctx, "k", 2, time.Minute, base.Add(at)); !d.Allowed {
			t.Fatalf("take at +%s refused", at)
		}
	}
	d, _ := m.Take(ctx, "k", 2, time.Minute, base.Add(time.Minute))
	if d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("at +1m: %+v, want refused until the second take (+1s) leaves", d)
	}
}

// One Take on a key already held allocates nothing.
func TestMemoryTakeDoesNotAllocate(t *testing.T) {
	m := limits.NewMemory(0)
	ctx, now := context.Background(), time.Now()
	i := 0
	allocs := allocstest.Least(1000, func() {
		i++
		_, _ = m.Take(ctx, "server", 50, time.Second, now.Add(time.Duration(i)*10*time.Millisecond))
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Take", allocs)
	}
}

func BenchmarkMemoryTake(b *testing.B) {
	m := limits.NewMemory(0)
	ctx, now := context.Background(), time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		_, _ = m.Take(ctx, "server", 600, time.Minute, now.Add(time.Duration(i)*50*time.Millisecond))
	}
}

func BenchmarkMemoryTakeParallel(b *testing.B) {
	m := limits.NewMemory(0)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = m.Take(ctx, "server", 600, time.Minute, time.Now())
		}
	})
}

func TestLocalGateConformance(t *testing.T) {
	limitstest.RunGate(t, func(*testing.T) limits.Gate { return limits.NewLocal(0) })
}
