package app

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/panics"
)

// Reload's defaults.
const (
	// DefaultReloadDebounce is how long a reload waits for the triggers to
	// stop (editors write several events per save).
	DefaultReloadDebounce = 200 * time.Millisecond
	// DefaultReloadApplyTimeout bounds how long one reload waits for the
	// requests running on the old config before closing its stale clients.
	DefaultReloadApplyTimeout = 30 * time.Second
	// maxDebounceWait bounds the debounce under a steady stream of triggers.
	maxDebounceWait = 10
)

// ConfigSum is the SHA-256 of a config file's bytes.
type ConfigSum [sha256.Size]byte

// LoadConfigFile reads the config file at path as serve does (config.Load
// with ConfigOptions) and returns the sum of the bytes it found there. The
// sum is taken before the file is parsed: when the file changes in between,
// the sum is the older content's, so a later change is never mistaken for
// the one already loaded.
func LoadConfigFile(path string, lookupEnv func(string) (string, bool)) (*config.Config, []config.Problem, ConfigSum, error) {
	sum, err := sumFile(path)
	if err != nil {
		return nil, nil, sum, err
	}
	cfg, problems, err := config.Load(path, ConfigOptions(lookupEnv))
	return cfg, problems, sum, err
}

// errEmptyConfig refuses a file that is empty when reloaded: it is almost
// always a save caught between its truncation and its write.
var errEmptyConfig = errors.New("config: the file is empty")

// sumFile hashes the file at path, following symlinks.
func sumFile(path string) (ConfigSum, error) {
	var sum ConfigSum
	f, err := os.Open(path)
	if err != nil {
		return sum, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, fmt.Errorf("config: %w", err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// ReloadOptions tunes NewReloader.
type ReloadOptions struct {
	// LookupEnv resolves os.environ/NAME references (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Loaded is the sum of the content the App was built from (see
	// LoadConfigFile); a change to identical bytes then applies nothing.
	Loaded ConfigSum
	// Debounce is how long triggers must be quiet before a reload runs
	// (zero: DefaultReloadDebounce).
	Debounce time.Duration
	// ApplyTimeout bounds one Apply (zero: DefaultReloadApplyTimeout).
	ApplyTimeout time.Duration
}

// Reloader re-reads an App's config file and applies it, on demand
// (Reload), on a signal (Trigger) or when the file changes (Watch). Reloads
// run one at a time.
type Reloader struct {
	a        *App
	path     string
	env      func(string) (string, bool)
	debounce time.Duration
	timeout  time.Duration

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	kick   chan struct{} // capacity 1: a reload is pending
	wg     sync.WaitGroup
	once   sync.Once

	pmu   sync.Mutex // guards force and watch
	force bool       // the pending reload came from Trigger
	watch io.Closer  // the file watcher, if any

	run       sync.Mutex // held by the reload running
	applied   ConfigSum  // the content running
	attempted ConfigSum  // the content last tried, applied or not
	failed    bool       // the last attempt failed

	smu     sync.Mutex // guards lastErr
	lastErr string
}

// NewReloader returns a Reloader for a, whose config was read from path,
// and starts its goroutine; Close stops it. Readiness reports the config
// generation and the last reload error from now on.
func NewReloader(a *App, path string, o ReloadOptions) *Reloader {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultReloadDebounce
	}
	if o.ApplyTimeout <= 0 {
		o.ApplyTimeout = DefaultReloadApplyTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reloader{
		a: a, path: path, env: o.LookupEnv, debounce: o.Debounce, timeout: o.ApplyTimeout,
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1),
		applied: o.Loaded, attempted: o.Loaded,
	}
	a.reloader.Store(r)
	r.wg.Add(1)
	panics.Go(a.log, "reloading the config", func() {
		defer r.wg.Done()
		r.loop()
	}, nil)
	return r
}

// Trigger schedules a reload that runs even when the file's content is the
// one last attempted (a signal asks for a retry); it returns at once.
func (r *Reloader) Trigger() { r.schedule(true) }

// schedule marks a reload pending; triggers during a debounce or a reload
// fold into one more reload.
func (r *Reloader) schedule(force bool) {
	r.pmu.Lock()
	r.force = r.force || force
	r.pmu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop runs the scheduled reloads, each after its debounce, until Close.
func (r *Reloader) loop() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.kick:
		}
		if !r.quiet() {
			return
		}
		r.pmu.Lock()
		force := r.force
		r.force = false
		r.pmu.Unlock()
		r.safeReload(force)
	}
}

// safeReload runs one scheduled reload; a panic in it is logged and
// reported as the last reload error, and the loop goes on.
func (r *Reloader) safeReload(force bool) {
	defer func() {
		if v := recover(); v != nil {
			r.a.log.Error("recovered from a panic", append([]any{"in", "reloading the config"}, panics.Attrs(v)...)...)
			r.setStatus("reload: internal error")
		}
	}()
	_, _ = r.reload(r.ctx, force)
}

// quiet waits until no trigger has come for the debounce (at most
// maxDebounceWait debounces); false when Close came first.
func (r *Reloader) quiet() bool {
	t := time.NewTimer(r.debounce)
	defer t.Stop()
	for range maxDebounceWait {
		select {
		case <-r.ctx.Done():
			return false
		case <-r.kick:
			t.Reset(r.debounce)
		case <-t.C:
			return true
		}
	}
	return true
}

// reload re-reads the config file and applies it unless it is the content
// already running; without force, content equal to the last attempt is
// skipped too, so an unchanged file seen by the watcher does nothing. On any
// problem the running config stays, the error is logged with the file's
// problems and readiness reports it. It reports whether a new config was
// applied.
func (r *Reloader) reload(ctx context.Context, force bool) (bool, error) {
	r.run.Lock()
	defer r.run.Unlock()
	if err := r.ctx.Err(); err != nil {
		return false, errors.New("reload: the reloader is closed")
	}
	log := r.a.log
	cfg, problems, sum, err := LoadConfigFile(r.path, r.env)
	if err == nil && sum == ConfigSum(sha256.Sum256(nil)) {
		cfg, err = nil, errEmptyConfig
	}
	if err == nil || sum != (ConfigSum{}) {
		switch {
		case sum == r.applied:
			if r.failed { // back to the running content: nothing failed any more
				r.failed, r.attempted = false, sum
				r.setStatus("")
				log.Info("config file is back to the running config", "file", r.path)
			}
			return false, nil
		case sum == r.attempted && !force:
			log.Debug("config unchanged; nothing to reload", "file", r.path)
			return false, nil
		}
		r.attempted = sum
	}
	logProblems(ctx, log, r.path, problems)
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, r.timeout)
		err = r.a.Apply(actx, cfg)
		cancel()
	}
	if err != nil {
		r.failed = true
		msg := reloadError(err, problems)
		r.setStatus(msg)
		args := []any{"file", r.path, "error", msg}
		if len(problems) > 0 {
			args = append(args, "problems", problemStrings(problems))
		}
		log.Error("config reload failed", args...)
		return false, fmt.Errorf("reload: %s", msg)
	}
	r.failed, r.applied = false, sum
	r.setStatus("")
	gen := r.a.generation.Load()
	log.Info("config reloaded", "file", r.path, "generation", gen, "servers", len(cfg.Servers))
	return true, nil
}

// setStatus records the last reload error ("" when the last reload did not fail).
func (r *Reloader) setStatus(lastErr string) {
	r.smu.Lock()
	defer r.smu.Unlock()
	r.lastErr = lastErr
}

// status is what readiness reports of the config.
func (r *Reloader) status() *front.ConfigStatus {
	r.smu.Lock()
	defer r.smu.Unlock()
	return &front.ConfigStatus{Generation: r.a.generation.Load(), LastReloadError: r.lastErr}
}

// Close stops the watcher and the reload goroutine, waiting for a reload
// that is running. It is safe to call more than once.
func (r *Reloader) Close() {
	r.once.Do(func() {
		r.cancel()
		r.pmu.Lock()
		w := r.watch
		r.watch = nil
		r.pmu.Unlock()
		if w != nil {
			_ = w.Close()
		}
		r.wg.Wait()
	})
}

// logProblems logs each problem of a config file with its line, as an
// error or a warning by its severity.
func logProblems(ctx context.Context, log *slog.Logger, path string, problems []config.Problem) {
	for _, p := range problems {
		lvl := slog.LevelWarn
		if p.Severity == config.SeverityError {
			lvl = slog.LevelError
		}
		log.Log(ctx, lvl, "config problem", "file", path, "line", p.Line, "problem", p.Msg)
	}
}

// problemStrings formats problems as "LINE: SEVERITY: MSG".
func problemStrings(problems []config.Problem) []string {
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = p.String()
	}
	return out
}

// reloadError is the one line readiness shows for a failed reload: the
// first error problem with its line, else the error without the file's
// path.
func reloadError(err error, problems []config.Problem) string {
	for _, p := range problems {
		if p.Severity == config.SeverityError {
			return fmt.Sprintf("line %d: %s", p.Line, p.Msg)
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "config: cannot read the file: " + pe.Err.Error()
	}
	return firstLine(err.Error())
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
