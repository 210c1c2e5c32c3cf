package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// env is what every layer below the Client shares: the log and its rate
// limiters, the bounds on server→client requests and buffered bytes, the
// request timeout and where notifications that belong to no request go.
// New builds one per Client; sessions, transports, muxes and exchanges hold
// it instead of the Client.
type env struct {
	log   *slog.Logger
	where string // the upstream for logs: redactURL of the URL, or the command

	requestTimeout time.Duration // Config.RequestTimeout
	maxMessage     int64         // Config.MaxMessageBytes
	perCall        int           // Config.MaxServerRequestsPerCall
	serverReqs     chan struct{} // one token per server→client request being served
	budget         *ByteBudget   // upstream answer bytes buffered

	msgLog *lineLimiter // per-message warnings (see msgWarn)
	dbgLog *lineLimiter // per-message debug lines (see msgDebug)
	causes causeLog     // failure causes warned about (see noteCause)

	onLog    func(params json.RawMessage)                         // Config.OnLog
	onNotify func(session, method string, params json.RawMessage) // Config.OnNotification

	// readers keeps the SSE readers of answers read to their end (see
	// sseReader): one answer after another reuses their buffers.
	readers sync.Pool

	// closing is set once the Client starts closing: what ends after it
	// (a stdio child stopped by Close) is not a failure.
	closing atomic.Bool
}

// sseReader returns a reader of an answer's event stream from src: one an
// earlier answer left (its buffers kept, see sse.Reader.Reset) when there
// is one. A sync.Pool holds them: as many as answers were read at once at
// most, and the garbage collector empties it when they stay unused, so
// what it keeps is bounded by the calls in flight.
func (e *env) sseReader(src io.Reader) *sse.Reader {
	if rd, ok := e.readers.Get().(*sse.Reader); ok {
		rd.Reset(src)
		return rd
	}
	return sse.NewReader(src, int(e.maxMessage))
}

// putSSEReader gives back a reader sseReader returned, once nothing it
// returned is read any more (its events' Data are the caller's own).
func (e *env) putSSEReader(rd *sse.Reader) {
	rd.Reset(nil)
	e.readers.Put(rd)
}

func newEnv(cfg *Config) *env {
	e := &env{
		log:            cfg.Logger,
		where:          cfg.Command,
		requestTimeout: cfg.RequestTimeout,
		maxMessage:     cfg.MaxMessageBytes,
		perCall:        cfg.MaxServerRequestsPerCall,
		serverReqs:     make(chan struct{}, cfg.MaxServerRequests),
		budget:         cfg.AnswerBudget,
		msgLog:         newLineLimiter(msgLinesPerMin, time.Minute, nil),
		dbgLog:         newLineLimiter(msgLinesPerMin, time.Minute, nil),
		onLog:          cfg.OnLog,
		onNotify:       cfg.OnNotification,
	}
	if cfg.URL != "" {
		e.where = redactURL(cfg.URL)
	}
	return e
}

// deliver hands a notification that belongs to no request to the client's
// callbacks.
func (e *env) deliver(m *jsonrpc.Message, cred string) {
	defer e.recoverPanic("notification callback", nil)
	switch m.Method {
	case mcp.NotifMessage:
		if e.onLog != nil {
			e.onLog(m.Params)
		}
		// Callers following this session relay it at their own level.
		if e.onNotify != nil {
			e.onNotify(cred, m.Method, m.Params)
		}
	case mcp.NotifProgress:
		// A progress notification for no live request is dropped.
	default:
		if e.onNotify != nil {
			e.onNotify(cred, m.Method, m.Params)
		}
	}
}

// TimeoutError is the gateway's own deadline for an upstream request passing.
type TimeoutError struct{ Budget time.Duration }

// Error implements error.
func (e *TimeoutError) Error() string {
	return "upstream request timed out after " + seconds(e.Budget)
}

// seconds formats a budget the way operators write it in config ("0.5s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// timedOut logs the one warning a timeout gets and returns its error. The
// upstream is named without userinfo or query, which may carry credentials.
func (e *env) timedOut(method string, budget time.Duration) error {
	e.log.Warn(fmt.Sprintf("upstream %s timed out after %s", e.where, seconds(budget)), "method", method, "budget", seconds(budget))
	return &TimeoutError{Budget: budget}
}
