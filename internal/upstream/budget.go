package upstream

import (
	"context"
	"io"
	"sync"

	"github.com/mcpgw/mcpgw/internal/later"
)

// DefaultAnswerBudget is the byte budget of a client whose Config sets no
// AnswerBudget.
const DefaultAnswerBudget = 64 << 20

// budgetChunk is the most one read returns before it takes budget.
const budgetChunk = 32 << 10

// ByteBudget bounds the upstream answer bytes buffered at once by every
// client it is given to (Config.AnswerBudget): bytes are taken from it
// before they are read and given back once the message they belong to has
// been handed on. A read that cannot get budget waits, within its request's
// deadline; when that passes the operation fails with a *BudgetError. It is
// safe for concurrent use.
//
// Answers read in pieces could otherwise deadlock: many large answers each
// holding part of the budget, all waiting for more. So holders are ranked by
// when they first took bytes, and when every holder is waiting for more, the
// youngest answer reader (never a shared stream) is told to give up: it fails
// at once with a *BudgetError and releases what it held, and the others go
// on. Under pressure the oldest answers complete, as many as fit, and the
// rest fail retryably instead of all waiting out their deadlines.
type ByteBudget struct {
	total int64

	mu      sync.Mutex
	used    int64
	waiting int                 // acquires waiting for bytes
	changed chan struct{}       // closed and replaced when bytes are given back while some wait
	seq     uint64              // the last holder rank handed out
	holders map[uint64]bool     // rank → whether that holder may be told to give up
	blocked map[uint64]struct{} // holders waiting for more bytes
	evict   uint64              // the rank told to give up; 0 when none
}

// NewByteBudget returns a budget of total bytes (DefaultAnswerBudget when
// total <= 0).
func NewByteBudget(total int64) *ByteBudget {
	if total <= 0 {
		total = DefaultAnswerBudget
	}
	return &ByteBudget{total: total, changed: make(chan struct{}),
		holders: map[uint64]bool{}, blocked: map[uint64]struct{}{}}
}

// acquire takes n bytes for br, waiting within ctx. n is capped at the
// total, so one answer as large as the whole budget can still be read alone.
func (b *ByteBudget) acquire(ctx context.Context, n int64, br *budgetReader) error {
	n = min(n, b.total)
	for {
		b.mu.Lock()
		if br.rank != 0 && b.evict == br.rank {
			b.evict = 0
			b.mu.Unlock()
			return &BudgetError{}
		}
		if b.used+n <= b.total {
			b.used += n
			if br.rank == 0 {
				b.seq++
				br.rank = b.seq
				b.holders[br.rank] = br.yield
			}
			b.mu.Unlock()
			return nil
		}
		if br.rank != 0 {
			b.blocked[br.rank] = struct{}{}
			b.breakDeadlock()
			if b.evict == br.rank { // this reader is the one to give up
				b.evict = 0
				delete(b.blocked, br.rank)
				b.mu.Unlock()
				return &BudgetError{}
			}
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
		delete(b.blocked, br.rank)
		b.mu.Unlock()
		if ctx.Err() != nil {
			return &BudgetError{}
		}
	}
}

// breakDeadlock tells the youngest yielding holder to give up when every
// holder is waiting for more bytes (so none will give any back). It is
// called with b.mu held.
func (b *ByteBudget) breakDeadlock() {
	if b.evict != 0 || len(b.blocked) < len(b.holders) {
		return
	}
	var youngest uint64
	for r := range b.blocked {
		if b.holders[r] && r > youngest {
			youngest = r
		}
	}
	if youngest == 0 {
		return // only shared streams hold bytes: they wait out their deadlines
	}
	b.evict = youngest
	b.wake()
}

// wake wakes every waiting acquire. It is called with b.mu held.
func (b *ByteBudget) wake() {
	if b.waiting > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
	}
}

// release gives back n bytes held by the holder of rank (0: none); that
// holder is no longer one.
func (b *ByteBudget) release(n int64, rank uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = max(0, b.used-n)
	if rank != 0 {
		delete(b.holders, rank)
		delete(b.blocked, rank)
		if b.evict == rank {
			b.evict = 0
		}
	}
	b.wake()
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
	// yield: this reader reads one answer for one call, and may be told to
	// give up to break a deadlock. Shared streams (stdio, HTTP+SSE, GET
	// streams) are not: failing them would fail every call on them.
	yield bool
	rank  uint64 // the holder rank while it holds bytes; 0 otherwise
}

// budgetReader reads a shared stream through the client's budget.
func (e *env) budgetReader(ctx context.Context, r io.Reader) *budgetReader {
	return &budgetReader{r: r, b: e.budget, ctx: ctx}
}

// answerReader reads one call's answer through the client's budget,
// yielding under pressure (see ByteBudget).
func (e *env) answerReader(ctx context.Context, r io.Reader) *budgetReader {
	return &budgetReader{r: r, b: e.budget, ctx: ctx, yield: true}
}

// Read implements io.Reader.
func (br *budgetReader) Read(p []byte) (int, error) {
	if len(p) > budgetChunk {
		p = p[:budgetChunk]
	}
	n, err := br.r.Read(p)
	if n > 0 {
		if aerr := br.b.acquire(br.ctx, int64(n), br); aerr != nil {
			return 0, aerr
		}
		br.held += int64(n)
	}
	return n, err
}

// releaseHeld gives back what the reads so far took.
func (br *budgetReader) releaseHeld() {
	if br.held == 0 && br.rank == 0 {
		return
	}
	n, rank := br.held, br.rank
	br.held, br.rank = 0, 0
	br.b.release(n, rank)
}

// releaseAfterAnswer gives back what the reads so far took once the
// downstream request (br.ctx) has written its answer, when the request asked
// for that (internal/later), else now: the answer's bytes stay in the
// gateway until then. Meanwhile the holder counts as one that will give
// bytes back, so it is never told to give up.
func (br *budgetReader) releaseAfterAnswer() {
	if br.held == 0 && br.rank == 0 {
		return
	}
	n, rank, b := br.held, br.rank, br.b
	br.held, br.rank = 0, 0
	if !later.Defer(br.ctx, func() { b.release(n, rank) }) {
		b.release(n, rank)
	}
}

// budgetBody is a response body read through the budget; Close closes the
// body (the bytes stay held until releaseHeld).
type budgetBody struct {
	*budgetReader
	io.Closer
}
