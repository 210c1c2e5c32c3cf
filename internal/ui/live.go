package ui

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/observe"
)

// Live bounds: entries kept for a newly opened activity page, event
// streams open at once, events queued per stream (a slow stream misses
// events beyond it), and servers with call statistics.
const (
	DefaultRing        = 200
	DefaultSubscribers = 16
	subscriberQueue    = 64
	maxServers         = 256
)

// latencyBounds are the upper bounds (ms) of the latency buckets the
// per-server quantiles are read from; the last bucket is open.
var latencyBounds = [...]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000}

// Entry is one downstream request as the activity log shows it: names,
// never arguments, results or tokens.
type Entry struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Target     string    `json:"target,omitempty"`
	Server     string    `json:"server,omitempty"`
	Caller     string    `json:"caller,omitempty"`
	Transport  string    `json:"transport"`
	Status     int       `json:"status"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// ServerStats are one server's upstream calls since start.
type ServerStats struct {
	Server string           `json:"server"`
	Calls  int64            `json:"calls"`
	Errors map[string]int64 `json:"errors"`
	P50MS  float64          `json:"p50_ms"`
	P99MS  float64          `json:"p99_ms"`
}

type serverAgg struct {
	calls   int64
	errors  map[string]int64
	buckets [len(latencyBounds) + 1]int64
}

// Live is the activity page's observe.Sink: a ring of the latest requests,
// the event streams following them and per-server call aggregates. It is
// built once per process; its methods are safe for concurrent use and never
// block the request that reports.
type Live struct {
	mu      sync.Mutex
	ring    []Entry
	next    int
	full    bool
	subs    map[chan Entry]struct{}
	maxSubs int
	servers map[string]*serverAgg
	closed  bool
}

// NewLive returns a Live keeping ring entries (≤ 0: DefaultRing) and at
// most subs event streams (≤ 0: DefaultSubscribers).
func NewLive(ring, subs int) *Live {
	if ring <= 0 {
		ring = DefaultRing
	}
	if subs <= 0 {
		subs = DefaultSubscribers
	}
	return &Live{ring: make([]Entry, ring), subs: make(map[chan Entry]struct{}), maxSubs: subs,
		servers: make(map[string]*serverAgg)}
}

// StartRequest implements observe.Sink.
func (l *Live) StartRequest(ctx context.Context, _ *observe.Request) context.Context { return ctx }

// StartCall implements observe.Sink.
func (l *Live) StartCall(ctx context.Context, _ *observe.Call) context.Context { return ctx }

// EndRequest records r in the ring and hands it to every stream whose
// queue has room.
func (l *Live) EndRequest(_ context.Context, r *observe.Request) {
	e := Entry{Time: r.Start.UTC(), Method: r.Method, Target: r.Target, Server: r.Server,
		Caller: callerName(r.Caller), Transport: r.Transport, Status: r.Status, Error: r.ErrorType(),
		DurationMS: float64(r.Duration.Microseconds()) / 1000}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = e
	l.next = (l.next + 1) % len(l.ring)
	if l.next == 0 {
		l.full = true
	}
	for ch := range l.subs {
		select {
		case ch <- e:
		default: // a slow stream misses this entry
		}
	}
}

// EndCall adds c to its server's aggregates.
func (l *Live) EndCall(_ context.Context, c *observe.Call) {
	ms := float64(c.Duration.Microseconds()) / 1000
	l.mu.Lock()
	defer l.mu.Unlock()
	agg := l.servers[c.Server]
	if agg == nil {
		if len(l.servers) >= maxServers {
			return
		}
		agg = &serverAgg{errors: make(map[string]int64)}
		l.servers[c.Server] = agg
	}
	agg.calls++
	if et := c.ErrorType(); et != "" {
		agg.errors[et]++
	}
	i := sort.SearchFloat64s(latencyBounds[:], ms)
	agg.buckets[i]++
}

// callerName names a caller for the log: its key alias, else its user,
// else a short prefix of its key hash.
func callerName(c observe.Caller) string {
	switch {
	case c.KeyAlias != "":
		return c.KeyAlias
	case c.User != "":
		return c.User
	case len(c.KeyHash) >= 8:
		return "key " + c.KeyHash[:8]
	}
	return ""
}

// Recent returns the ring's entries, oldest first.
func (l *Live) Recent() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Entry
	if l.full {
		out = append(out, l.ring[l.next:]...)
	}
	return append(out, l.ring[:l.next]...)
}

// Stats returns every server's aggregates, by server name.
func (l *Live) Stats() []ServerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ServerStats, 0, len(l.servers))
	for name, agg := range l.servers {
		errs := make(map[string]int64, len(agg.errors))
		for k, v := range agg.errors {
			errs[k] = v
		}
		out = append(out, ServerStats{Server: name, Calls: agg.calls, Errors: errs,
			P50MS: quantile(agg.buckets[:], agg.calls, 0.5), P99MS: quantile(agg.buckets[:], agg.calls, 0.99)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// quantile is the upper bound of the bucket holding the q-th call (the
// last bound for the open bucket); 0 without calls.
func quantile(buckets []int64, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range buckets {
		seen += c
		if seen >= rank {
			if i < len(latencyBounds) {
				return latencyBounds[i]
			}
			break
		}
	}
	return latencyBounds[len(latencyBounds)-1]
}

// subscribe opens a stream of new entries; ok is false when
// DefaultSubscribers streams are already open or Live is closed. cancel
// closes it.
func (l *Live) subscribe() (ch chan Entry, cancel func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.subs) >= l.maxSubs {
		return nil, nil, false
	}
	ch = make(chan Entry, subscriberQueue)
	l.subs[ch] = struct{}{}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if _, open := l.subs[ch]; open {
				delete(l.subs, ch)
				close(ch)
			}
		})
	}, true
}

// Close ends every stream; no new one opens.
func (l *Live) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for ch := range l.subs {
		delete(l.subs, ch)
		close(ch)
	}
}
