package later

import (
	"context"
	"testing"
)

func TestDeferRunsOnceAtTheEnd(t *testing.T) {
	ctx, run := With(context.Background())
	n := 0
	if !Defer(ctx, func() { n++ }) || !Defer(ctx, func() { n += 10 }) {
		t.Fatal("Defer refused work on a live list")
	}
	if n != 0 {
		t.Fatalf("work ran before the end: %d", n)
	}
	run()
	run()
	if n != 11 {
		t.Fatalf("n = %d, want 11 (each piece of work once)", n)
	}
	if Defer(ctx, func() { n++ }) {
		t.Fatal("Defer accepted work after the list ran; it would never run")
	}
	if Defer(context.Background(), func() {}) {
		t.Fatal("Defer accepted work without a list")
	}
}

func TestWithoutRunsAtOnce(t *testing.T) {
	ctx, run := With(context.Background())
	defer run()
	if Defer(Without(ctx), func() {}) {
		t.Fatal("Defer accepted work under Without; it must run at once")
	}
	if !Defer(ctx, func() {}) {
		t.Fatal("Without changed the request's own list")
	}
}
