package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mcpgw/mcpgw/internal/panics"
)

// Invalidation listener timings.
const (
	// listenIdlePing: after this long without a notification the listener pings its
	// connection, so a silently dead one is found and replaced.
	listenIdlePing = 30 * time.Second
	// listenPingTimeout bounds that ping and each reconnect attempt.
	listenPingTimeout = 10 * time.Second
	// listenMinBackoff and listenMaxBackoff bound the wait between reconnect attempts
	// (doubling from the first to the second).
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 10 * time.Second
)

// listener holds one connection (outside the pool) that LISTENs on notifyChannel and forgets
// the cache keys other writes name. When its connection fails, the cache is cleared and off
// until a new connection listens again (notifications sent meanwhile are lost), then cleared
// again and back on.
type listener struct {
	cfg   *pgx.ConnConfig
	cache *keyCache
	log   *slog.Logger
	apply func(payload string) // applies one notification to cache
	// reconnected runs after a new connection listens again: notifications sent while the
	// connection was down are lost, so what they would have said must be re-read.
	reconnected func()

	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	pid      atomic.Uint32 // the listening connection's backend process id; 0 while down
	connects atomic.Int64  // connections made, the first included
}

// startListener connects and LISTENs (failing when it cannot), then serves notifications in
// a goroutine until stop.
func startListener(ctx context.Context, cfg *pgx.ConnConfig, cache *keyCache, log *slog.Logger, origin string,
	serversChanged func()) (*listener, error) {
	l := &listener{cfg: cfg, cache: cache, log: log, reconnected: serversChanged}
	l.apply = func(payload string) {
		if applyPayload(cache, origin, payload) {
			serversChanged()
		}
	}
	if err := l.start(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// start connects and starts the goroutine.
func (l *listener) start(ctx context.Context) error {
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(runCtx, conn)
	return nil
}

// stop ends the goroutine and closes its connection; it returns once both are done.
func (l *listener) stop() {
	l.stopOnce.Do(func() {
		l.cancel()
		<-l.done
	})
}

// connect opens a connection and LISTENs on it.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connecting the invalidation listener: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("store: LISTEN %s: %w", notifyChannel, err)
	}
	l.pid.Store(conn.PgConn().PID())
	l.connects.Add(1)
	return conn, nil
}

// run serves conn until it fails, then reconnects with backoff, until ctx ends. A panic
// outside serving (which recovers its own) ends it with the cache off for good, since nothing
// would forget other replicas' writes any more.
func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	defer func() {
		if v := recover(); v != nil {
			l.cache.reset(true)
			l.log.Error("recovered from a panic; the lookup cache is off", append([]any{"in", "store invalidation listener"},
				panics.Attrs(v)...)...)
		}
	}()
	backoff := listenMinBackoff
	for {
		err := l.serveSafely(ctx, conn)
		closeConn(conn)
		l.pid.Store(0)
		if ctx.Err() != nil {
			return
		}
		l.cache.reset(true)
		l.log.Warn("store: the invalidation listener lost its connection; the lookup cache is off until it reconnects",
			"err", redactPassword(err, l.cfg.Password))
		for conn = nil; conn == nil; {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			if conn, err = l.connect(ctx); err != nil {
				backoff = min(2*backoff, listenMaxBackoff)
				l.log.Warn("store: the invalidation listener cannot reconnect", "err", redactPassword(err, l.cfg.Password),
					"retry_in", backoff)
			}
		}
		backoff = listenMinBackoff
		l.cache.reset(false)
		l.reconnected()
		l.log.Info("store: the invalidation listener reconnected; the lookup cache was cleared")
	}
}

// serveSafely is serve with a panic turned into an error (the connection is then replaced).
func (l *listener) serveSafely(ctx context.Context, conn *pgx.Conn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			l.log.Error("recovered from a panic", append([]any{"in", "store invalidation listener"}, panics.Attrs(v)...)...)
			err = errors.New("store: the invalidation listener panicked")
		}
	}()
	return l.serve(ctx, conn)
}

// serve applies each notification on conn, pinging it when idle, until it fails or ctx ends.
func (l *listener) serve(ctx context.Context, conn *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdlePing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.apply(n.Payload)
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !pgconn.Timeout(err):
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return err
		}
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
