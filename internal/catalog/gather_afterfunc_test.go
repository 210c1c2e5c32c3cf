package catalog

import (
	"context"
	"sync"
	"testing"
)

// afterFuncCtx is a context that can be cancelled (a Done channel of its
// own) and counts the callbacks registered on it (context.AfterFunc uses a
// context's own AfterFunc method) and not yet disarmed.
type afterFuncCtx struct {
	context.Context
	done  chan struct{}
	mu    sync.Mutex
	armed int
}

func (c *afterFuncCtx) Done() <-chan struct{} { return c.done }

func (c *afterFuncCtx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	c.armed++
	c.mu.Unlock()
	var once sync.Once
	return func() bool {
		stopped := false
		once.Do(func() {
			c.mu.Lock()
			c.armed--
			c.mu.Unlock()
			stopped = true
		})
		return stopped
	}
}

// TestPatientlyLeavesNoCallbackOnItsCaller: a fan-out whose calls have all
// answered holds nothing on the caller's context, however long that context
// lives (a held listen runs many fan-outs under one).
func TestPatientlyLeavesNoCallbackOnItsCaller(t *testing.T) {
	c := New(Config{})
	ctx := &afterFuncCtx{Context: context.Background(), done: make(chan struct{})}
	for range 50 {
		vals, errs := Patiently(ctx, c, []string{"a", "b", "c"}, func(_ context.Context, i int) (int, error) { return i, nil })
		if vals[2] != 2 || errs[0] != nil {
			t.Fatalf("Patiently = %v %v", vals, errs)
		}
	}
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	if ctx.armed != 0 {
		t.Fatalf("%d callbacks still registered on the caller's context after 150 answered calls", ctx.armed)
	}
}
