package sharedstate

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/notify"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// Bounds of the Hub (see the package doc).
const (
	// DefaultMaxEventBytes bounds one event crossing replicas; a larger
	// one stays on the replica that heard it.
	DefaultMaxEventBytes = 64 << 10
	// hubQueue bounds the events waiting to be published; beyond it an
	// event stays on the replica that heard it.
	hubQueue = 256
	// publishTimeout bounds publishing one event.
	publishTimeout = 2 * time.Second
)

// crosses reports whether an event with method is sent to the other
// replicas. Only list changes cross: every replica's catalog caches the
// lists. resources/updated and notifications/message do not: a replica
// whose callers follow a resource or a server's log holds its own upstream
// session that hears them.
func crosses(method string) bool {
	switch method {
	case mcp.NotifToolsListChanged, mcp.NotifPromptsListChanged, mcp.NotifResourcesListChanged:
		return true
	}
	return false
}

// Hub is notify.Hub across replicas: Publish delivers an event to this
// replica's subscribers at once, as notify.Memory does, and publishes the
// events that cross (see crosses) on one Redis channel (prefix +
// "notify"), tagged with this replica's name; every other replica
// delivers what it receives to its own subscribers and ignores its own
// echo. Publishing to Redis is asynchronous (a bounded queue and one
// goroutine), so Publish never waits on Redis.
type Hub struct {
	local   *notify.Memory
	conn    *redisconn.Conn
	channel string
	origin  string
	log     *slog.Logger
	sub     *subscriber
	queue   chan []byte
	stop    chan struct{}
	done    chan struct{}
}

var _ notify.Hub = (*Hub)(nil)

// event is an Event as published.
type event struct {
	Origin  string          `json:"o"`
	Server  string          `json:"s"`
	Session string          `json:"k"`
	Method  string          `json:"m"`
	Params  json.RawMessage `json:"p,omitempty"`
}

// NewHub returns a hub shared through conn's Redis under prefix; origin
// names this replica and must be unique among those sharing it. Close
// ends its goroutines.
func NewHub(conn *redisconn.Conn, prefix, origin string, log *slog.Logger) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{local: notify.NewMemory(), conn: conn, channel: prefix + "notify", origin: origin, log: log,
		queue: make(chan []byte, hubQueue), stop: make(chan struct{}), done: make(chan struct{})}
	h.sub = subscribe(conn, h.channel, log, h.receive)
	go h.publishLoop()
	return h
}

// Publish delivers e here and queues it for the other replicas when it crosses.
func (h *Hub) Publish(e notify.Event) {
	h.local.Publish(e)
	if !crosses(e.Method) {
		return
	}
	b, err := json.Marshal(event{Origin: h.origin, Server: e.Server, Session: e.Session, Method: e.Method, Params: e.Params})
	if err != nil || len(b) > DefaultMaxEventBytes {
		return
	}
	select {
	case h.queue <- b:
	default:
		h.log.Debug("shared notification queue full; the event stays on this replica", "server", e.Server, "method", e.Method)
	}
}

// Subscribe adds f as a subscriber of every replica's crossing events and
// this replica's others.
func (h *Hub) Subscribe(f func(notify.Event)) (cancel func()) { return h.local.Subscribe(f) }

// Close ends the subscription and the publisher; events still queued are
// dropped. It may be called more than once.
func (h *Hub) Close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	h.sub.close()
}

// publishLoop publishes queued events until Close.
func (h *Hub) publishLoop() {
	defer close(h.done)
	for {
		select {
		case <-h.stop:
			return
		case b := <-h.queue:
			h.publish(b)
		}
	}
}

// publish sends one event; while Redis is down the event stays here (the
// Conn logs the outage once).
func (h *Hub) publish(b []byte) {
	defer func() {
		if v := recover(); v != nil {
			h.log.Error("recovered from a panic; still publishing", append([]any{"in", "shared notification publisher"}, panics.Attrs(v)...)...)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	h.conn.Observe(h.conn.Client().Publish(ctx, h.channel, b).Err())
}

// receive delivers another replica's event to this replica's subscribers.
func (h *Hub) receive(payload string) {
	if len(payload) > DefaultMaxEventBytes {
		return
	}
	var e event
	if err := json.Unmarshal([]byte(payload), &e); err != nil || e.Origin == h.origin || !crosses(e.Method) {
		return
	}
	h.local.Publish(notify.Event{Server: e.Server, Session: e.Session, Method: e.Method, Params: e.Params})
}
