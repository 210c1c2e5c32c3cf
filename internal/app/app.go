package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"
	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/seal"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/limits"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/notify"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// App is the gateway built from a config: its HTTP surface, its upstream
// clients, and what must be stopped at shutdown.
type App struct {
	shared
	serverState // the stored servers merged into the file's; the config generation
	limits      config.HTTPLimits
	dataDir     string
	handler     http.Handler

	cur   atomic.Pointer[generation]
	state atomic.Int32 // a lifecycle value

	reloader atomic.Pointer[Reloader] // set by NewReloader; readiness reports its status

	mu     sync.Mutex // serialises Apply and Close
	closed bool
}

// The App's lifecycle, as readiness reports it.
const (
	starting int32 = iota
	ready
	closing
)

// Option sets one of New's settings.
type Option func(*options)

type options struct {
	lookupEnv   func(string) (string, bool)
	log         *slog.Logger
	dataDir     string
	version     string
	hub         notify.Hub
	httpClient  *http.Client
	cacheTTL    time.Duration // the store's lookup cache TTL; 0: store.DefaultCacheTTL
	noMetrics   bool          // no metrics sink and no /metrics (WithoutObservation)
	noAccessLog bool          // no access log (WithoutObservation)
	accessOut   io.Writer     // the access log's own output (WithAccessLogWriter)
	// redisPrefix starts the Redis keys of the limits; "" is limits.DefaultPrefix.
	redisPrefix string
}

// WithLookupEnv reads the environment through f instead of os.LookupEnv.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = f }
}

// WithLogger logs to log instead of discarding.
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithDataDir keeps local state in dir, created (0700) by New, which fails
// when it cannot write there; readiness fails while it stays unwritable.
func WithDataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// WithVersion is the version the gateway introduces itself with (default "dev").
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithHub carries upstream notifications through hub instead of an in-process one.
func WithHub(hub notify.Hub) Option { return func(o *options) { o.hub = hub } }

// WithUpstreamHTTPClient makes every HTTP upstream client use c instead of its own.
func WithUpstreamHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// New builds the gateway for cfg. The App answers readiness with 503 until
// Start is called.
func New(cfg *config.Config, opts ...Option) (*App, error) {
	o := options{lookupEnv: os.LookupEnv, log: slog.New(slog.DiscardHandler), version: "dev"}
	for _, opt := range opts {
		opt(&o)
	}
	env, err := ReadEnv(o.lookupEnv)
	if err != nil {
		return nil, err
	}
	if o.dataDir != "" {
		if err := ensureDataDir(o.dataDir); err != nil {
			return nil, err
		}
	}
	sealer, err := newSealer(env.SaltKey, o.log)
	if err != nil {
		return nil, err
	}
	rc, err := openRedis(cfg, o)
	if err != nil {
		return nil, err
	}
	st, err := openStore(cfg, o)
	if err != nil {
		closeRedis(rc, o.log)
		return nil, err
	}
	rs := newReplicaState(rc, o.hub, o.log)
	a := &App{limits: cfg.General.HTTP, dataDir: o.dataDir}
	a.shared = shared{
		env: env, log: o.log, info: mcp.Implementation{Name: "mcpgw", Version: o.version},
		sealer: sealer, budget: upstream.NewByteBudget(upstream.DefaultAnswerBudget),
		hub: rs.hub, tombstones: rs.tombstones, relay: rs.relay, closeShared: rs.close,
		rpms: &rpms{}, httpClient: o.httpClient, store: st, redis: rc, fanout: catalog.NewWorkers(0, o.log),
		gate: newSharedGate(rc, cfg.General.RedisFailureMode, limits.RedisOptions{Prefix: o.redisPrefix, Log: o.log}),
	}
	if a.tracer, err = newTracer(cfg, o); err != nil {
		a.gate.close()
		rs.close()
		closeRedis(rc, o.log)
		return nil, errors.Join(err, closeStore(st))
	}
	built := false
	defer func() {
		if !built {
			_ = a.fanout.Close(context.Background()) // nothing has run on it yet
			a.closeTracer(context.Background())
			a.spend.close(o.log)
		}
	}()
	if err := a.assemble(cfg, o, env, sealer); err != nil {
		return nil, errors.Join(err, closeStore(a.store))
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	_, cfg, err = a.withStoredServers(ctx, cfg)
	cancel()
	if err != nil {
		return nil, errors.Join(err, closeStore(st))
	}
	g, err := a.wire(cfg, nil)
	if err != nil {
		if st != nil {
			_ = st.Close()
		}
		a.gate.close()
		rs.close()
		closeRedis(rc, o.log)
		return nil, err
	}
	a.start(cfg, g)
	built = true
	return a, nil
}

// start puts g, the first generation built from cfg, in service: the
// per-server settings, the prober, the server sync and the admitting handler.
func (a *App) start(cfg *config.Config, g *generation) {
	a.rpms.set(cfg.Servers)
	a.spend.setCosts(cfg.Servers)
	a.cur.Store(g)
	a.prober.set(cfg.Servers, g.clients)
	a.startServerSync()
	a.handler = admit.Handler(http.HandlerFunc(a.serve), admit.Config{
		Guard:           admit.NewHostGuard(cfg.General.AllowedHosts, cfg.General.AllowedOrigins),
		BodyReadTimeout: cfg.General.HTTP.ReadTimeout,
		MaxInflight:     cfg.General.HTTP.MaxInflightRequests,
	})
}

// assemble builds the parts New puts around the store and Redis: the spend log, metrics, UI,
// pins, observer, prober, health routes and the server registry. On error the caller closes
// the store.
func (a *App) assemble(cfg *config.Config, o options, env Env, sealer *seal.Sealer) error {
	var err error
	if a.spend, err = newSpendLog(a.store, cfg.General, o.log); err != nil {
		return err
	}
	a.metrics = a.newMetrics(o, cfg)
	if a.ui, err = newUIState(env, a.upstreamOpen); err != nil {
		return err
	}
	a.pins = newPinState(a.store, o.log, a.metrics)
	a.observer = newObserver(o, cfg, a.metrics, traceSink(a.tracer), a.spend.observeSink(), a.ui.sink())
	if strings.TrimSpace(env.SaltKey) != "" { // continuations only with a real, shared salt key
		a.continuations = sealer
	}
	a.prober = newProber(o.log, cfg.General.Health)
	a.previewEnv = o.lookupEnv
	a.shared.serverHealth = a.healthOf
	a.health = &front.Health{Version: o.version, Checks: a.checks(), Config: a.configStatus, Servers: a.prober.statuses}
	a.servers = serverRegistry{a}
	return a.initServers(cfg, o.lookupEnv)
}

// checks are readiness's conditions: the lifecycle and the data dir are
// named in the body only when they fail, so a ready gateway's body is the
// same with or without them.
func (a *App) checks() []front.Check {
	out := []front.Check{
		{Name: "lifecycle", HideWhenOK: true, Probe: func(context.Context) error {
			switch a.state.Load() {
			case starting:
				return errors.New("starting")
			case closing:
				return errors.New("shutting down")
			}
			return nil
		}},
		{Name: "config", Probe: func(context.Context) error {
			if a.cur.Load() == nil {
				return errors.New("not loaded")
			}
			return nil
		}},
	}
	if a.dataDir != "" {
		out = append(out, front.Check{Name: "data_dir", HideWhenOK: true, Probe: func(context.Context) error {
			return probeDataDir(a.dataDir)
		}})
	}
	if a.store != nil {
		out = append(out, front.Check{Name: "store", Probe: a.store.Ping})
	}
	if a.redis != nil {
		out = append(out, redisCheck(a.redis, a.gate))
	}
	return out
}

// configStatus is readiness's "config" detail: present once a Reloader
// watches the config file, or while servers are kept in the store.
func (a *App) configStatus() *front.ConfigStatus {
	if r := a.reloader.Load(); r != nil {
		return r.status()
	}
	if a.storedEnabled(a.fileCfg.Load()) { // the API changes the config too
		return &front.ConfigStatus{Generation: a.generation.Load()}
	}
	return nil
}

// Handler returns the gateway's whole HTTP surface (MCP, REST and health
// routes) behind one admission layer: the DNS-rebinding guard, the in-flight
// bound and the body read deadline. Each request is served by the graph
// current when it arrived, whatever Apply does meanwhile.
func (a *App) Handler() http.Handler { return a.handler }

// serve hands r to the current generation, counted in its in-flight requests.
func (a *App) serve(w http.ResponseWriter, r *http.Request) {
	for {
		g := a.cur.Load()
		if g.enter() {
			g.serveCounted(w, r)
			return
		}
		// g was retired and drained between the load and enter; the next
		// load sees its successor.
	}
}

// Server returns an HTTP server for Handler with the config's timeouts. Its
// ReadTimeout stays unset on purpose: net/http would let it fire while a
// finished body's connection is watched for the client leaving, cancelling
// every request that runs longer; the admission layer bounds body reads
// instead, and long-lived streams lift their deadlines.
func (a *App) Server() *http.Server {
	return &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: a.limits.ReadHeaderTimeout,
		WriteTimeout:      a.limits.WriteTimeout,
		IdleTimeout:       a.limits.IdleTimeout,
		MaxHeaderBytes:    a.limits.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
}

// Start marks the App ready: readiness answers 200 from now on while its
// checks pass. Call it once Handler is being served.
func (a *App) Start() {
	a.state.CompareAndSwap(starting, ready)
	a.prober.start()
}

// Drain marks the App as shutting down (readiness answers 503) and ends
// every long-lived downstream stream, so an HTTP server's graceful shutdown
// can finish.
func (a *App) Drain() {
	a.state.Store(closing)
	a.listens.End() // the listens of every generation, kept across Apply
	a.cur.Load().front.Close()
	a.ui.close()
}

// Close drains the App, then closes every upstream session and child, in
// parallel, within ctx. It is safe to call more than once.
func (a *App) Close(ctx context.Context) error {
	a.Drain()
	a.stopServerSync()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.prober.close()
	g := a.cur.Load()
	g.front.Close() // again: Apply may have swapped generations since Drain
	g.unsubscribe()
	clients := make([]*upstream.Client, 0, len(g.clients))
	for _, c := range g.clients {
		clients = append(clients, c)
	}
	closeClients(ctx, a.log, clients)
	if err := a.fanout.Close(ctx); err != nil { // after the clients: a fan-out still running ends with its upstream's session
		a.log.Warn("closing", "error", err.Error())
	}
	a.observer.Close()   // the access log's buffered lines
	a.spend.close(a.log) // before the store it writes to
	if a.store != nil {
		if err := a.store.Close(); err != nil {
			a.log.Warn("closing the store", "error", err.Error())
		}
	}
	a.gate.close()
	a.closeShared()
	closeRedis(a.redis, a.log)
	a.closeTracer(ctx)
	return ctx.Err()
}
