package spend

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// Defaults of the spend log retention.
const (
	// DefaultRetentionInterval is how often old rows are deleted
	// (LiteLLM's maximum_spend_logs_retention_interval default: daily).
	DefaultRetentionInterval = 24 * time.Hour
	// DefaultRetentionBatch is how many rows one DELETE removes at most.
	DefaultRetentionBatch = 1000
	// retentionPause is the pause between two batches of one sweep, so a
	// large backlog does not hold the database busy without a break.
	retentionPause = 50 * time.Millisecond
)

// RetentionConfig configures a Retention.
type RetentionConfig struct {
	// Delete removes at most limit rows that started before before and
	// says how many it removed (store.Store.DeleteSpendLogsBefore).
	Delete func(ctx context.Context, before time.Time, limit int) (int64, error)
	// Period is how long rows are kept; it must be positive.
	Period time.Duration
	// Interval is how often a sweep runs (zero: DefaultRetentionInterval);
	// the first runs at start.
	Interval time.Duration
	// Batch bounds each DELETE (zero: DefaultRetentionBatch).
	Batch  int
	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now
}

// Retention deletes spend rows older than its period in the background.
type Retention struct {
	cfg  RetentionConfig
	loop *Loop
}

// StartRetention starts the sweeping goroutine: a sweep at start, then one every Interval,
// each deleting Batch rows at a time until fewer than Batch are left. A panic in a sweep is
// recovered and logged and the next sweep runs as planned; Stop ends the goroutine.
func StartRetention(cfg RetentionConfig) *Retention {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRetentionInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultRetentionBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Retention{cfg: cfg}
	r.loop = StartLoop(cfg.Interval, "spend log retention", cfg.Logger, r.sweep)
	return r
}

// Stop ends the sweeps (a DELETE in flight is cancelled) and waits for the goroutine.
func (r *Retention) Stop() {
	if r == nil {
		return
	}
	r.loop.Stop()
}

// Loop runs a piece of background work now and then every interval until Stop.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartLoop runs work at once and then every interval on a goroutine of its own, until
// Stop; work's context ends at Stop. A panic in work is logged at ERROR (naming what, never
// the panic's value) and the next run goes ahead as planned.
func StartLoop(interval time.Duration, what string, log *slog.Logger, work func(ctx context.Context)) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			runSafe(ctx, what, log, work)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return l
}

// Stop ends the loop (cancelling a run in progress) and waits for its goroutine; a nil
// Loop is stopped already.
func (l *Loop) Stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

// runSafe runs work once, logging a panic instead of ending the loop.
func runSafe(ctx context.Context, what string, log *slog.Logger, work func(ctx context.Context)) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("recovered from a panic", append([]any{"in", what}, panics.Attrs(v)...)...)
		}
	}()
	work(ctx)
}

// sweep deletes the rows that started before now minus Period, Batch at a time.
func (r *Retention) sweep(ctx context.Context) {
	before := r.cfg.Now().Add(-r.cfg.Period)
	var total int64
	for ctx.Err() == nil {
		n, err := r.cfg.Delete(ctx, before, r.cfg.Batch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.Warn("deleting old spend logs failed; the next sweep tries again", "error", err.Error())
			}
			break
		}
		if n < int64(r.cfg.Batch) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(retentionPause):
		}
	}
	if total > 0 {
		r.cfg.Logger.Info("deleted old spend logs", "rows", total, "older_than", before.UTC().Format(time.RFC3339))
	}
}
