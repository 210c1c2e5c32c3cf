package upstream

import (
	"context"
	"io"
	"sync"
)

// DefaultAnswerBudget is the byte budget of a client whose Config sets no
// AnswerBudget.
const DefaultAnswerBudget = 256 << 20

// budgetChunk is the most one read returns before it takes budget.
const budgetChunk = 32 << 10

// ByteBudget bounds the upstream answer bytes buffered at once by every
// client it is given to (Config.AnswerBudget): bytes are taken from it
// before they are read and given back once the message they belong to has
// been handed on. A read that cannot get budget waits, within its request's
// deadline; when that passes the operation fails with a *BudgetError. It is
// safe for concurrent use.
type ByteBudget struct {
	total int64

	mu      sync.Mutex
	used    int64
	waiting int           // acquires waiting for bytes
	changed chan struct{} // closed and replaced when bytes are given back while some wait
}

// NewByteBudget returns a budget of total bytes (DefaultAnswerBudget when
// total <= 0).
func NewByteBudget(total int64) *ByteBudget {
	if total <= 0 {
		total = DefaultAnswerBudget
	}
	return &ByteBudget{total: total, changed: make(chan struct{})}
}

// acquire takes n bytes, waiting within ctx. n is capped at the total, so
// one answer as large as the whole budget can still be read alone.
func (b *ByteBudget) acquire(ctx context.Context, n int64) error {
	n = min(n, b.total)
	for {
		b.mu.Lock()
		if b.used+n <= b.total {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		changed := b.changed
		b.waiting++
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if ctx.Err() != nil {
			return &BudgetError{}
		}
	}
}

// release gives back n bytes taken by acquire.
func (b *ByteBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used = max(0, b.used-n)
	if b.waiting > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
	}
	b.mu.Unlock()
}

// inUse reports the bytes taken.
func (b *ByteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// BudgetError means an upstream answer could not be read within its
// deadline because answers in flight held the whole byte budget. It is
// retryable; the upstream did nothing wrong.
type BudgetError struct{}

// Error implements error.
func (e *BudgetError) Error() string {
	return "upstream answer not read: the gateway is buffering too many upstream answers; retry later"
}

// budgetReader reads through a ByteBudget: what each read returns is taken
// from the budget (waiting within ctx) before it is handed on, and stays
// taken (held) until releaseHeld, once the message those bytes belong to has
// been handed on. A read is at most budgetChunk bytes, so a reader is never
// more than that ahead of its budget, and an idle reader holds nothing. It
// is used by one goroutine at a time.
type budgetReader struct {
	r    io.Reader
	b    *ByteBudget
	ctx  context.Context
	held int64
}

func (c *Client) budgetReader(ctx context.Context, r io.Reader) *budgetReader {
	return &budgetReader{r: r, b: c.budget, ctx: ctx}
}

// Read implements io.Reader.
func (br *budgetReader) Read(p []byte) (int, error) {
	if len(p) > budgetChunk {
		p = p[:budgetChunk]
	}
	n, err := br.r.Read(p)
	if n > 0 {
		if aerr := br.b.acquire(br.ctx, int64(n)); aerr != nil {
			return 0, aerr
		}
		br.held += int64(n)
	}
	return n, err
}

// releaseHeld gives back what the reads so far took.
func (br *budgetReader) releaseHeld() {
	br.b.release(br.held)
	br.held = 0
}

// budgetBody is a response body read through the budget; Close closes the
// body (the bytes stay held until releaseHeld).
type budgetBody struct {
	*budgetReader
	io.Closer
}
