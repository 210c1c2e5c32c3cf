package catalog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// goroutineID is the calling goroutine's id, from its stack's header.
func goroutineID() string {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(b[:n]), "goroutine "), " ")
	return id
}

// A call after the last one returned runs on the same goroutine: the
// worker's stack, grown by the first walk, is the next one's.
func TestWorkersReuseAGoroutine(t *testing.T) {
	w := NewWorkers(4, nil)
	defer w.Close(context.Background())
	seen := map[string]bool{}
	for range 20 {
		ran := make(chan string)
		w.Go(func() { ran <- goroutineID() })
		seen[<-ran] = true
		// The worker goes back to wait once the call returned: give it a
		// moment, so the next call can find it waiting.
		waitIdle(t, w, 1)
	}
	if len(seen) != 1 {
		t.Fatalf("20 calls one after another ran on %d goroutines, want 1", len(seen))
	}
}

// waitIdle waits until n workers are alive and none runs a call (each is
// back at its select, so a handoff is taken).
func waitIdle(t *testing.T, w *Workers, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		alive := w.alive
		w.mu.Unlock()
		if alive == n && idleWorkers(n) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("workers did not go back to wait")
}

// idleWorkers reports whether n goroutines wait in Workers.loop's select.
func idleWorkers(n int) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	waiting := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("[select")) && bytes.Contains(g, []byte("catalog.(*Workers).loop")) {
			waiting++
		}
	}
	return waiting == n
}

// Calls are never queued behind the bound: more calls than workers, each
// waiting for all the others to start, all run at once.
func TestWorkersNeverQueueACall(t *testing.T) {
	w := NewWorkers(2, nil)
	defer w.Close(context.Background())
	const calls = 10
	var started, done sync.WaitGroup
	started.Add(calls)
	done.Add(calls)
	release := make(chan struct{})
	for range calls {
		w.Go(func() {
			defer done.Done()
			started.Done()
			<-release
		})
	}
	ok := make(chan struct{})
	go func() { started.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(5 * time.Second):
		t.Fatal("calls past the bound waited for a worker")
	}
	w.mu.Lock()
	alive := w.alive
	w.mu.Unlock()
	if alive != 2 {
		t.Fatalf("%d workers kept, want the bound, 2", alive)
	}
	close(release)
	done.Wait()
}

// A panicking call is logged without its value and the worker serves the
// next call.
func TestWorkersRecoverAPanic(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedBuffer{b: &logs, mu: &mu}, nil))
	w := NewWorkers(1, log)
	defer w.Close(context.Background())
	w.Go(func() { panic("secret-value") })
	ran := make(chan struct{})
	w.Go(func() { close(ran) })
	<-ran
	waitIdle(t, w, 1)
	mu.Lock()
	defer mu.Unlock()
	if out := logs.String(); !strings.Contains(out, "level=ERROR") || strings.Contains(out, "secret-value") {
		t.Fatalf("log = %q, want an ERROR without the panic value", out)
	}
}

type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Close waits for a busy worker's call and ends the idle ones; a call
// handed over after Close still runs (on a goroutine of its own). TestMain's
// goleak check holds that nothing is left.
func TestWorkersClose(t *testing.T) {
	w := NewWorkers(4, nil)
	w.Go(func() {})
	waitIdle(t, w, 1)
	release, finished := make(chan struct{}), make(chan struct{})
	busy := make(chan struct{})
	w.Go(func() { close(busy); <-release; close(finished) }) // the idle worker takes it
	<-busy
	closeWaitsFor(t, w, release, "a call")
	select {
	case <-finished:
	default:
		t.Fatal("Close returned before the call it waited for")
	}
	after := make(chan struct{})
	w.Go(func() { close(after) })
	<-after
	_ = w.Close(context.Background()) // twice is fine
	var nilWorkers *Workers
	nilRan := make(chan struct{})
	nilWorkers.Go(func() { close(nilRan) })
	<-nilRan
	_ = nilWorkers.Close(context.Background())
}

// A fan-out on workers still reaches every call's context with its caller's
// end, and does not wait for calls that outlive it.
func TestPatientlyOnWorkersCancelsEveryCall(t *testing.T) {
	w := NewWorkers(2, nil)
	defer w.Close(context.Background())
	c := New(Config{Workers: w})
	ctx, cancel := context.WithCancel(context.Background())
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	ended := make(chan error, n)
	go func() { started.Wait(); cancel() }()
	_, errs := Patiently(ctx, c, make([]string, n), func(ctx context.Context, _ int) (int, error) {
		started.Done()
		<-ctx.Done()
		ended <- ctx.Err()
		return 0, ctx.Err()
	})
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("call %d: %v, want context.Canceled", i, err)
		}
	}
	for range n {
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a call's context ended with %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call's context was not cancelled with its caller's")
		}
	}
	waitIdle(t, w, 2) // the fan-out ran on the catalog's workers: two kept, the bound
}

// A fan-out's fetches share one detached parent: it keeps the caller's
// values, not its cancellation, and is made once, not twice per upstream.
func TestPatientlyDetachesOnce(t *testing.T) {
	type key struct{}
	w := NewWorkers(4, nil)
	defer w.Close(context.Background())
	c := New(Config{Workers: w})
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	parents := make([]context.Context, 3)
	_, errs := Patiently(ctx, c, make([]string, 3), func(ctx context.Context, i int) (int, error) {
		parents[i] = detachedFrom(ctx)
		if ctx.Value(key{}) != "v" || parents[i].Value(key{}) != "v" {
			t.Errorf("call %d lost the caller's values", i)
		}
		if parents[i].Done() != nil {
			t.Errorf("call %d: the detached parent can be cancelled", i)
		}
		return 0, nil
	})
	if errs[0] != nil || parents[0] != parents[1] || parents[1] != parents[2] {
		t.Fatalf("errs %v; the fetches' detached parents differ", errs)
	}

}

// Close waits for a call past the bound (on a goroutine of its own) as for
// a kept worker's.
func TestWorkersCloseWaitsPastTheBound(t *testing.T) {
	w := NewWorkers(1, nil)
	kept, over := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 2)
	w.Go(func() { started <- struct{}{}; <-kept })
	<-started
	w.Go(func() { started <- struct{}{}; <-over }) // the one worker is busy: a goroutine of its own
	<-started
	close(kept)
	closeWaitsFor(t, w, over, "a call past the bound")
}

// closeWaitsFor closes w and fails unless Close is still waiting 50 ms later,
// while what ran is held on release; it then lets go of release and waits for
// Close to return.
func closeWaitsFor(t *testing.T, w *Workers, release chan struct{}, what string) {
	t.Helper()
	closed := make(chan struct{})
	go func() { _ = w.Close(context.Background()); close(closed) }()
	select {
	case <-closed:
		t.Fatalf("Close returned while %s ran", what)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
}

// Close waits no longer than its context: a call still running makes it
// return the context's error, and the call goes on to its end.
func TestWorkersCloseWithinItsContext(t *testing.T) {
	w := NewWorkers(2, nil)
	release, started := make(chan struct{}), make(chan struct{})
	w.Go(func() { close(started); <-release })
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a call running = %v, want the deadline", err)
	}
	close(release)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A call that ends its goroutine with runtime.Goexit frees the worker's
// place: the next call gets a kept worker again.
func TestWorkersGoexitFreesItsPlace(t *testing.T) {
	w := NewWorkers(1, nil)
	defer w.Close(context.Background())
	exited := make(chan struct{})
	w.Go(func() { defer close(exited); runtime.Goexit() })
	<-exited
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		alive := w.alive
		w.mu.Unlock()
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers counted alive after the only one exited", alive)
		}
	}
	w.Go(func() {})
	waitIdle(t, w, 1)
}
