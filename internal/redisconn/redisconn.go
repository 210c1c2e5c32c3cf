package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults of the client's bounds (see the package doc).
const (
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = time.Second
	DefaultPoolSize       = 32
	DefaultMaxActiveConns = 64
	DefaultPoolTimeout    = 1500 * time.Millisecond
	DefaultMinIdleConns   = 2
	DefaultIdleTime       = 5 * time.Minute
)

// Settings name a Redis server and how to reach it.
type Settings struct {
	// URL is redis://[user:password@]host[:port][/db] or rediss://… for TLS.
	URL string
	// Host and Port name the server when URL is empty (Port 0: 6379).
	Host string
	Port int
	// Username and Password authenticate; they fill what URL leaves unset.
	Username, Password string
	// TLS uses TLS with the host form (a rediss:// URL always does).
	TLS bool
	// CommandTimeout bounds one command's read and write (0: DefaultCommandTimeout).
	CommandTimeout time.Duration
}

// Configured reports whether s names a server.
func (s Settings) Configured() bool { return s.URL != "" || s.Host != "" }

// Options returns the go-redis options for s. Its errors never contain the URL or the password.
func (s Settings) Options() (*redis.Options, error) {
	var o *redis.Options
	switch {
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return nil, errors.New("the Redis URL is not a valid redis:// or rediss:// URL (host, optional port and database number)")
		}
		o, err = redis.ParseURL(s.URL)
		if err != nil {
			return nil, fmt.Errorf("the Redis URL (%s://…) is not valid: a port must be a number and the path a database number", u.Scheme)
		}
	case s.Host != "":
		port := s.Port
		if port == 0 {
			port = 6379
		}
		if port < 0 || port > 65535 || strings.ContainsAny(s.Host, "/@ ") {
			return nil, errors.New("the Redis host and port do not name a server")
		}
		o = &redis.Options{Addr: net.JoinHostPort(s.Host, strconv.Itoa(port))}
		if s.TLS {
			o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.Host}
		}
	default:
		return nil, errors.New("no Redis configured")
	}
	if o.Username == "" {
		o.Username = s.Username
	}
	if o.Password == "" {
		o.Password = s.Password
	}
	timeout := s.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = DefaultDialTimeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1 // no retries: an outage is seen at once
	o.PoolSize, o.MaxActiveConns, o.PoolTimeout = DefaultPoolSize, DefaultMaxActiveConns, DefaultPoolTimeout
	o.MinIdleConns, o.ConnMaxIdleTime = DefaultMinIdleConns, DefaultIdleTime
	o.DisableIdentity = true // no CLIENT SETINFO: older servers and proxies refuse it
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return o, nil
}

// Conn is the Redis client and its health. It is safe for concurrent use.
type Conn struct {
	client *redis.Client
	addr   string
	log    *slog.Logger

	mu      sync.Mutex
	down    bool
	since   time.Time
	lastErr string
	outages uint64

	// isDown mirrors down for Try, which runs per command without the lock;
	// tried is when a command was last let through while down (unix ns).
	isDown atomic.Bool
	tried  atomic.Int64
}

// RetryEvery is how often, while Redis is down, Try lets one command through
// to find out whether it answers again; the others take their fallback at
// once instead of each waiting on a Redis that does not answer.
const RetryEvery = time.Second

// Try reports whether to send a command now: always while Redis is up; while
// it is down (as Observe last recorded), one command per RetryEvery among all
// the Conn's users, the first RetryEvery after the outage began.
func (c *Conn) Try() bool {
	if !c.isDown.Load() {
		return true
	}
	now := time.Now().UnixNano()
	last := c.tried.Load()
	return now-last >= int64(RetryEvery) && c.tried.CompareAndSwap(last, now)
}

// New builds the client for s; it does not connect (the first command does). log receives one
// WARN per outage and one INFO per recovery.
func New(s Settings, log *slog.Logger) (*Conn, error) {
	o, err := s.Options()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// go-redis's own lines (one per failed dial) are debug detail next to Observe's one WARN per
	// outage, and must be JSON like every other line. Its logger is process-wide: the last
	// Conn's log receives them.
	redis.SetLogger(debugLogger{log})
	return &Conn{client: redis.NewClient(o), addr: o.Addr, log: log, since: time.Now()}, nil
}

// Client is the go-redis client.
func (c *Conn) Client() *redis.Client { return c.client }

// Addr is the server's host:port, for messages (it holds no credential).
func (c *Conn) Addr() string { return c.addr }

// Close closes the client's connections.
func (c *Conn) Close() error { return c.client.Close() }

// Unavailable reports whether err means Redis could not be reached or did not answer in time
// (as opposed to an answer that is an error, such as a script error). A context cancelled by the
// caller is not an outage.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, redis.Nil) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		// A server that is loading, read-only or not yet authenticated answers but cannot serve.
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "READONLY") ||
			strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "MASTERDOWN")
	}
	return true // io.EOF, a reset connection and the like
}

// Observe records the outcome of one command: down when Unavailable(err), else up. It returns
// whether Redis is up after it.
func (c *Conn) Observe(err error) bool {
	if err != nil && errors.Is(err, context.Canceled) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.down
	}
	down := Unavailable(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case down && !c.down:
		c.down, c.since, c.lastErr = true, time.Now(), redact(err.Error())
		c.tried.Store(c.since.UnixNano())
		c.isDown.Store(true)
		c.outages++
		c.log.Warn("redis unreachable; shared state falls back until it answers", "addr", c.addr, "error", c.lastErr)
	case down:
		c.lastErr = redact(err.Error())
	case c.down:
		c.log.Info("redis reachable again", "addr", c.addr, "down_for", time.Since(c.since).Round(time.Millisecond).String())
		c.down, c.since = false, time.Now()
		c.isDown.Store(false)
	}
	return !c.down
}

// Health is the state Observe last recorded.
type Health struct {
	// Up says Redis answered the last command.
	Up bool
	// Since is when the state last changed (or when the Conn was built).
	Since time.Time
	// LastError is the error of the last failed command while down; it holds no credential.
	LastError string
	// Outages counts the times Redis went from up to down.
	Outages uint64
}

// Health returns the current state.
func (c *Conn) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Health{Up: !c.down, Since: c.since, LastError: c.lastErr, Outages: c.outages}
}

// Ping sends PING, records its outcome and returns an error naming why Redis is not usable.
func (c *Conn) Ping(ctx context.Context) error {
	err := c.client.Ping(ctx).Err()
	if !c.Observe(err) {
		return fmt.Errorf("redis at %s unreachable: %s", c.addr, redact(err.Error()))
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("redis at %s: %s", c.addr, redact(err.Error()))
	}
	return nil
}

// redact cuts an error text at a URL's user information, should a dependency ever quote one.
func redact(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.IndexByte(s[i+3:], '@'); j >= 0 {
			return s[:i+3] + "[redacted]" + s[i+3+j:]
		}
	}
	return s
}

// debugLogger sends go-redis's log lines to a slog.Logger at DEBUG.
type debugLogger struct{ log *slog.Logger }

// Printf logs one go-redis line.
func (d debugLogger) Printf(ctx context.Context, format string, v ...any) {
	d.log.DebugContext(ctx, "redis client", "detail", redact(fmt.Sprintf(format, v...)))
}
