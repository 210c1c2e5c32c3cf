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
	// the queue full is folded into an aggregate (DefaultMergeSize), never waited for.
	DefaultQueueSize = 10000
	// DefaultMergeSize is how many aggregates wait at most: a row that finds the queue
	// full adds its call and spend to the aggregate of its UTC day, key, team and server
	// (store.SpendRow.Calls), so budgets and the daily rollup still count it while its
	// spend_logs row is lost; a row with no aggregate and no room for one is dropped.
	DefaultMergeSize = 1000
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
	MergeSize     int
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
	Written int64 // rows committed (aggregates not counted: their calls are in Merged)
	Merged  int64 // rows folded into an aggregate because the queue was full
	Dropped int64 // rows Add refused: the queue and the aggregates full, or the writer closed
	Failed  int64 // calls whose write failed after its retries (or while closing): a row each, an aggregate's calls (also in Merged)
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
	// merged are the aggregates of rows that found pending full (store.SpendRow.Calls),
	// at most cfg.MergeSize, by mergeKey; written with the next batch.
	merged   []store.SpendRow
	mergedAt map[mergeKey]int
	// owedKeys and owedTeams are the spend of rows accepted but not yet written, by key
	// hash and by team id: Owed adds it to what the store says (a budget sees a call's
	// cost as soon as it ends, not after the commit). owedN is how many entries they
	// hold, read without the lock.
	owedKeys, owedTeams map[string]float64
	owedN               atomic.Int64

	queued  atomic.Int64
	written atomic.Int64
	folded  atomic.Int64
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
	if cfg.MergeSize <= 0 {
		cfg.MergeSize = DefaultMergeSize
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
		pending: make([]store.SpendRow, 0, min(cfg.BatchSize, cfg.QueueSize)), now: time.Now,
		mergedAt: make(map[mergeKey]int), owedKeys: make(map[string]float64), owedTeams: make(map[string]float64)}
	panics.Go(cfg.Logger, "spend writer", w.run, nil) // run closes done however it ends
	return w
}

// Add queues r for writing and reports whether it was queued: false when the queue is
// full (the row is folded into its aggregate, or dropped and counted when there is no room
// for one) or the writer closed (dropped). It never waits for the writer.
func (w *Writer) Add(r store.SpendRow) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.dropped.Add(1)
		return false
	}
	if len(w.pending) >= w.cfg.QueueSize {
		w.fold(r)
		w.mu.Unlock()
		return false
	}
	w.pending = append(w.pending, r)
	w.owe(&r, 1)
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

// mergeKey is what an aggregate row stands for: daily_spend's key.
type mergeKey struct {
	day               int64 // UTC days since the epoch of the rows' start
	key, team, server string
}

// fold adds r to its aggregate (w.mu held), or drops it when there is no room for one.
func (w *Writer) fold(r store.SpendRow) {
	k := mergeKey{day: r.StartTime.Unix() / 86400, key: r.APIKey, team: r.TeamID, server: r.Server}
	i, ok := w.mergedAt[k]
	if !ok {
		if len(w.merged) >= w.cfg.MergeSize {
			w.dropped.Add(1)
			return
		}
		i = len(w.merged)
		w.mergedAt[k] = i
		w.merged = append(w.merged, store.SpendRow{CallType: r.CallType, Server: r.Server, APIKey: r.APIKey,
			TeamID: r.TeamID, Status: store.SpendSuccess, StartTime: r.StartTime, EndTime: r.EndTime})
	}
	a := &w.merged[i]
	a.Calls++
	if r.Status != store.SpendSuccess {
		a.Failed++
	}
	a.Spend += r.Spend
	a.EndTime = r.EndTime
	w.owe(&r, 1)
	w.folded.Add(1)
}

// owe adds sign times r's spend to what its key and team owe (w.mu held).
func (w *Writer) owe(r *store.SpendRow, sign float64) {
	if r.Spend == 0 {
		return
	}
	owe := func(m map[string]float64, id string) {
		if id == "" {
			return
		}
		if v := m[id] + sign*r.Spend; sign > 0 || v > 1e-12 { // no float residue kept
			m[id] = v
		} else {
			delete(m, id)
		}
	}
	owe(w.owedKeys, r.APIKey)
	owe(w.owedTeams, r.TeamID)
	w.owedN.Store(int64(len(w.owedKeys) + len(w.owedTeams)))
}

// Owed is the spend of the rows of the key with hash keyHash, and of team teamID, that the
// writer has accepted but not yet written: what a budget adds to the store's spend until
// the write (a write that failed is forgotten, as its rows are).
func (w *Writer) Owed(keyHash, teamID string) (key, team float64) {
	if w.owedN.Load() == 0 {
		return 0, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.owedKeys[keyHash], w.owedTeams[teamID]
}

// settle forgets what batch's rows owed, once they are written (or their write failed).
func (w *Writer) settle(batch []store.SpendRow) {
	if w.owedN.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range batch {
		w.owe(&batch[i], -1) // an aggregate owed its calls' sum
	}
}

// Stats returns what the writer has done so far.
func (w *Writer) Stats() Stats {
	return Stats{Queued: w.queued.Load(), Written: w.written.Load(), Merged: w.folded.Load(), Dropped: w.dropped.Load(),
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
			w.settle(batch)
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
				w.settle(batch)
				w.recycle(batch)
			}
		}
		timer.Stop()
	}
}

// next takes the batch due now (all of it when closing), the aggregates last, or returns
// how long until the waiting rows are due (0: none wait).
func (w *Writer) next(closing bool) ([]store.SpendRow, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.pending)
	if n == 0 {
		return w.takeMerged(nil), 0
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
	return w.takeMerged(batch), 0
}

// takeMerged appends the waiting aggregates to batch and forgets them (w.mu held).
func (w *Writer) takeMerged(batch []store.SpendRow) []store.SpendRow {
	if len(w.merged) == 0 {
		return batch
	}
	batch = append(batch, w.merged...)
	w.merged = w.merged[:0]
	clear(w.mergedAt)
	return batch
}

// calls is how many calls batch records: a row each, an aggregate its Calls.
func calls(batch []store.SpendRow) int64 {
	n := int64(0)
	for i := range batch {
		n += max(int64(batch[i].Calls), 1)
	}
	return n
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
			w.failed.Add(calls(batch))
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
		w.failed.Add(calls(batch))
		return
	}
	logged := 0
	for i := range batch {
		if batch[i].Calls == 0 {
			logged++
		}
	}
	w.written.Add(int64(logged))
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
