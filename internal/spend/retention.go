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
	cfg    RetentionConfig
	cancel context.CancelFunc
	done   chan struct{}
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
	ctx, cancel := context.WithCancel(context.Background())
	r := &Retention{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	return r
}

// Stop ends the sweeps (a DELETE in flight is cancelled) and waits for the goroutine.
func (r *Retention) Stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (r *Retention) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.sweepSafe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepSafe runs one sweep, logging a panic instead of ending the loop.
func (r *Retention) sweepSafe(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			r.cfg.Logger.Error("recovered from a panic", append([]any{"in", "spend log retention"}, panics.Attrs(v)...)...)
		}
	}()
	r.sweep(ctx)
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
