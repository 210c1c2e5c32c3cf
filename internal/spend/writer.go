package spend

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/store"
)

// The writer's defaults.
const (
	// DefaultQueueSize is how many rows wait for the writer at most; a row that finds
	// the queue full is dropped (and counted), never waited for.
	DefaultQueueSize = 10000
	// DefaultBatchSize is how many rows one write commits at most.
	DefaultBatchSize = 500
	// DefaultFlushInterval is how long a row that costs something waits for more to share
	// its write: a budget sees it after that, plus the write.
	DefaultFlushInterval = 50 * time.Millisecond
	// DefaultFreeFlushInterval is how long a row that costs nothing waits: it changes no
	// spend a budget reads, only what /spend/logs and the daily rollup show.
	DefaultFreeFlushInterval = time.Second
	// retries is how many times a failed write is tried again, 100 ms apart, before its
	// rows are counted as failed.
	retries = 3
)

// WriterConfig configures a Writer; zero fields take the defaults.
type WriterConfig struct {
	// Record writes one batch (store.RecordSpend).
	Record        func(context.Context, []store.SpendRow) error
	QueueSize     int
	BatchSize     int
	FlushInterval time.Duration
	// FreeFlushInterval is FlushInterval for a batch of rows that all cost 0; never less
	// than FlushInterval.
	FreeFlushInterval time.Duration
	Logger            *slog.Logger
}

// Stats is what a Writer has done so far.
type Stats struct {
	Queued  int64 // rows accepted by Add
	Written int64 // rows committed
	Dropped int64 // rows Add refused because the queue was full
	Failed  int64 // rows whose write failed after its retries (or while closing)
	// MaxLag is the longest time from a row's EndTime to the commit that wrote it.
	MaxLag time.Duration
	// Batches is how many writes committed; SlowestWrite the longest one took.
	Batches      int64
	SlowestWrite time.Duration
}

// Writer writes spend rows in batches on a goroutine of its own: Add never blocks.
//
// Add appends the row to a bounded slice under a mutex and wakes the goroutine only when
// the batch's timing changes: its first row (the goroutine arms its timer), its first row
// that costs something (a shorter timer), and a full batch. Rejected: a channel of rows,
// which woke the goroutine for every row, a goroutine hand-off per call.
type Writer struct {
	cfg  WriterConfig
	kick chan struct{} // capacity 1: a row changed when the waiting batch is due
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	pending []store.SpendRow // rows waiting, at most cfg.QueueSize
	spare   []store.SpendRow // a written batch's slice, reused for pending
	firstAt time.Time        // when pending's first row came
	costAt  time.Time        // when pending's first row that costs something came
	costs   bool             // a row of pending costs something
	closed  bool

	queued  atomic.Int64
	written atomic.Int64
	dropped atomic.Int64
	failed  atomic.Int64
	maxLag  atomic.Int64
	batches atomic.Int64
	slowest atomic.Int64
	now     func() time.Time
}

// NewWriter starts a Writer; Close ends it.
func NewWriter(cfg WriterConfig) *Writer {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = DefaultFlushInterval
	}
	if cfg.FreeFlushInterval <= 0 {
		cfg.FreeFlushInterval = DefaultFreeFlushInterval
	}
	cfg.FreeFlushInterval = max(cfg.FreeFlushInterval, cfg.FlushInterval)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Writer{cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		pending: make([]store.SpendRow, 0, min(cfg.BatchSize, cfg.QueueSize)), now: time.Now}
	panics.Go(cfg.Logger, "spend writer", w.run, nil) // run closes done however it ends
	return w
}

// Add queues r for writing and reports whether it was queued: false when the queue is
// full or the writer closed (the row is dropped and counted).
func (w *Writer) Add(r store.SpendRow) bool {
	w.mu.Lock()
	if w.closed || len(w.pending) >= w.cfg.QueueSize {
		w.mu.Unlock()
		w.dropped.Add(1)
		return false
	}
	w.pending = append(w.pending, r)
	n := len(w.pending)
	wake := n == 1 || n == w.cfg.BatchSize
	if n == 1 {
		w.firstAt = time.Now()
	}
	if r.Spend != 0 && !w.costs {
		w.costs, w.costAt, wake = true, time.Now(), true
	}
	w.mu.Unlock()
	w.queued.Add(1)
	if wake {
		select {
		case w.kick <- struct{}{}:
		default: // a wake is pending already
		}
	}
	return true
}

// Stats returns what the writer has done so far.
func (w *Writer) Stats() Stats {
	return Stats{Queued: w.queued.Load(), Written: w.written.Load(), Dropped: w.dropped.Load(),
		Failed: w.failed.Load(), MaxLag: time.Duration(w.maxLag.Load()), Batches: w.batches.Load(),
		SlowestWrite: time.Duration(w.slowest.Load())}
}

// Close stops taking rows, writes those queued and returns when they are written or ctx
// ends (the rows still queued then are counted as failed); it returns ctx's error then.
func (w *Writer) Close(ctx context.Context) error {
	w.once.Do(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		close(w.stop)
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes a batch when BatchSize rows wait, or when the first of them has waited
// FreeFlushInterval, or the first that costs something FlushInterval, until Close; then it
// writes what is queued.
func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch, wait := w.next(false)
		if len(batch) > 0 {
			w.write(batch)
			w.recycle(batch)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-w.kick:
		case <-timer.C:
		case <-w.stop:
			timer.Stop()
			for {
				batch, _ := w.next(true)
				if len(batch) == 0 {
					return
				}
				w.write(batch)
				w.recycle(batch)
			}
		}
		timer.Stop()
	}
}

// next takes the batch due now (all of it when closing), or returns how long until the
// waiting rows are due (0: none wait).
func (w *Writer) next(closing bool) ([]store.SpendRow, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.pending)
	if n == 0 {
		return nil, 0
	}
	now := time.Now()
	if n < w.cfg.BatchSize && !closing {
		due := w.firstAt.Add(w.cfg.FreeFlushInterval)
		if d := w.costAt.Add(w.cfg.FlushInterval); w.costs && d.Before(due) {
			due = d
		}
		if wait := due.Sub(now); wait > 0 {
			return nil, wait
		}
	}
	take := min(n, w.cfg.BatchSize)
	var batch []store.SpendRow
	if take == n {
		batch, w.pending, w.spare = w.pending, w.spare[:0], nil
	} else { // a backlog: the rest start the next batch, as if they came now
		batch = append(w.spare[:0], w.pending[:take]...)
		w.spare = nil
		rest := copy(w.pending, w.pending[take:])
		clear(w.pending[rest:])
		w.pending = w.pending[:rest]
	}
	w.firstAt, w.costs = now, false
	for _, r := range w.pending {
		if r.Spend != 0 {
			w.costs, w.costAt = true, now
			break
		}
	}
	return batch, 0
}

// recycle keeps a written batch's slice for the rows to come.
func (w *Writer) recycle(batch []store.SpendRow) {
	clear(batch) // no row's strings outlive their write
	w.mu.Lock()
	if w.spare == nil {
		w.spare = batch[:0]
	}
	w.mu.Unlock()
}

// write commits batch, trying again on failure; a panic in Record is recovered and the
// batch counted as failed.
func (w *Writer) write(batch []store.SpendRow) {
	defer func() {
		if v := recover(); v != nil {
			w.cfg.Logger.Error("recovered from a panic", append([]any{"in", "spend writer"}, panics.Attrs(v)...)...)
			w.failed.Add(int64(len(batch)))
		}
	}()
	var err error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-w.stop: // closing: one last try, no more waits
				attempt = retries
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := w.now()
		err = w.cfg.Record(ctx, batch)
		cancel()
		storeMax(&w.slowest, int64(w.now().Sub(began)))
		if err == nil {
			break
		}
	}
	if err != nil {
		w.cfg.Logger.Warn("writing spend logs", "rows", len(batch), "error", err.Error())
		w.failed.Add(int64(len(batch)))
		return
	}
	w.written.Add(int64(len(batch)))
	w.batches.Add(1)
	now := w.now()
	for _, r := range batch {
		storeMax(&w.maxLag, int64(now.Sub(r.EndTime)))
	}
}

// storeMax makes m hold v when v is larger.
func storeMax(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}
