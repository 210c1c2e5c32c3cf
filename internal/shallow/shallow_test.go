package shallow

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/panics"

	"github.com/mcpgw/mcpgw/internal/shallow/shallowtest"
)

// TestRunsAndWaits: f has run, and what it wrote is seen, once Do returns.
func TestRunsAndWaits(t *testing.T) {
	x := 0
	Do(func() { x = 42 })
	if x != 42 {
		t.Fatalf("x = %d", x)
	}
}

// TestPanicReraised: a panic in f reaches the caller with its value, and
// the log names the panic's site, which the caller's stack does not hold.
func TestPanicReraised(t *testing.T) {
	boom := errors.New("boom")
	var v any
	func() {
		defer func() { v = recover() }()
		Do(panicSite(boom))
		t.Fatal("Do returned")
	}()
	r, ok := v.(*panics.Raised)
	if !ok || r.Value != boom {
		t.Fatalf("recovered %#v, want a *panics.Raised of boom", v)
	}
	attrs := panics.Attrs(v)
	if attrs[1] != "*errors.errorString" || !strings.Contains(attrs[3].(string), "panicSite") ||
		!strings.Contains(attrs[3].(string), "TestPanicReraised") {
		t.Fatalf("logged %q, want the value's type and both the site and the caller", attrs)
	}
}

// panicSite returns a function that panics with v in a frame of its own.
func panicSite(v any) func() {
	return func() { panic(v) }
}

// TestAbortAndGoexitPassThrough: http.ErrAbortHandler is raised again as it
// is (it is looked for by identity), and a Goexit in f ends the caller.
func TestAbortAndGoexitPassThrough(t *testing.T) {
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		Do(panicSite(http.ErrAbortHandler))
	}()
	if v := <-got; v != http.ErrAbortHandler {
		t.Fatalf("an abort came back as %#v", v)
	}
	exited := make(chan bool, 1)
	go func() {
		defer func() { exited <- recover() == nil }() // runs on a Goexit; a panic is recovered
		Do(runtime.Goexit)
		panic("Do returned after a Goexit")
	}()
	if !<-exited {
		t.Fatal("a Goexit in f did not end the caller's goroutine cleanly")
	}
}

// TestHeldStackStaysSmall: goroutines that do deep work through Do and
// then wait hold a 2 KB stack each after a collection; doing the same
// work in place leaves them 4 KB or more.
func TestHeldStackStaysSmall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's stack guard makes every goroutine outgrow 2 KB")
	}
	const n = 400
	perGoroutine := func(step func(f func())) float64 {
		release := make(chan struct{})
		started := make(chan struct{})
		defer close(release)
		before := shallowtest.StackInuse()
		for range n {
			go func() {
				step(func() { shallowtest.Deep(12) })
				started <- struct{}{}
				<-release
			}()
		}
		for range n {
			<-started
		}
		return float64(shallowtest.StackInuse()-before) / n
	}
	inPlace := perGoroutine(func(f func()) { f() })
	through := perGoroutine(Do)
	t.Logf("stack per held goroutine: in place %.0f B, through Do %.0f B", inPlace, through)
	if through > 3<<10 || inPlace < 4<<10 {
		t.Fatalf("stack per held goroutine: in place %.0f B, through Do %.0f B; want ≥ 4 KB and ≤ 3 KB", inPlace, through)
	}
}

// BenchmarkDo is what a step costs over calling f in place.
func BenchmarkDo(b *testing.B) {
	x := 0
	for b.Loop() {
		Do(func() { x++ })
	}
}
