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
type Writer struct {
	cfg     WriterConfig
	queue   chan store.SpendRow
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
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
	w := &Writer{cfg: cfg, queue: make(chan store.SpendRow, cfg.QueueSize),
		stop: make(chan struct{}), done: make(chan struct{}), now: time.Now}
	panics.Go(cfg.Logger, "spend writer", w.run, nil) // run closes done however it ends
	return w
}

// Add queues r for writing and reports whether it was queued: false when the queue is
// full or the writer closed (the row is dropped and counted).
func (w *Writer) Add(r store.SpendRow) bool {
	select {
	case <-w.stop:
		w.dropped.Add(1)
		return false
	default:
	}
	select {
	case w.queue <- r:
		w.queued.Add(1)
		return true
	default:
		w.dropped.Add(1)
		return false
	}
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
	w.once.Do(func() { close(w.stop) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run collects rows into batches, writing one when it is full, or when its first row has
// waited FreeFlushInterval, or its first row that costs something FlushInterval, until
// Close; then it drains the queue.
func (w *Writer) run() {
	defer close(w.done)
	batch := make([]store.SpendRow, 0, w.cfg.BatchSize)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var due time.Time // when batch is written at the latest
	costs := false    // a row of batch costs something
	flush := func() {
		if len(batch) > 0 {
			w.write(batch)
			batch = batch[:0]
		}
		costs = false
	}
	for {
		select {
		case r := <-w.queue:
			switch now := time.Now(); {
			case len(batch) == 0:
				costs = r.Spend != 0
				due = now.Add(w.cfg.FreeFlushInterval)
				if costs {
					due = now.Add(w.cfg.FlushInterval)
				}
				timer.Reset(due.Sub(now))
			case r.Spend != 0 && !costs:
				costs = true
				if d := now.Add(w.cfg.FlushInterval); d.Before(due) {
					due = d
					timer.Reset(d.Sub(now))
				}
			}
			batch = append(batch, r)
			if len(batch) == w.cfg.BatchSize {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		case <-w.stop:
			timer.Stop()
			for {
				select {
				case r := <-w.queue:
					batch = append(batch, r)
					if len(batch) == w.cfg.BatchSize {
						flush()
					}
				default:
					flush()
					return
				}
			}
		}
	}
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
