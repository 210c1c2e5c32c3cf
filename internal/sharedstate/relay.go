package sharedstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// DefaultMaxRelayBytes bounds one forwarded answer; a larger one is not
// forwarded (its request on the holding replica times out as if unanswered).
const DefaultMaxRelayBytes = 1 << 20

// Relay is front.Relay through Redis pub/sub: each replica subscribes to a
// channel of its own (prefix + "relay:" + its name), and an answer is
// published on the channel of the replica its request id names, so only
// that replica receives it. Asking costs no Redis command; an answer that
// arrives on the replica holding its request costs none either.
type Relay struct {
	conn    *redisconn.Conn
	prefix  string
	replica string
	max     int
	log     *slog.Logger
	sub     *subscriber

	mu       sync.RWMutex
	next     uint64
	handlers map[uint64]func(session string, msg []byte)
}

var _ front.Relay = (*Relay)(nil)

// relayed is one forwarded answer as published.
type relayed struct {
	Session string          `json:"s"`
	Msg     json.RawMessage `json:"m"`
}

// NewRelay subscribes replica's channel in conn's Redis under prefix;
// Close ends the subscription. replica must be unique among the replicas
// sharing the Redis and prefix, and contain no '.'.
func NewRelay(conn *redisconn.Conn, prefix, replica string, log *slog.Logger) *Relay {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{conn: conn, prefix: prefix, replica: replica, max: DefaultMaxRelayBytes, log: log,
		handlers: map[uint64]func(string, []byte){}}
	r.sub = subscribe(conn, r.channel(replica), log, r.receive)
	return r
}

// Replica is this replica's name.
func (r *Relay) Replica() string { return r.replica }

// Forward publishes msg for session on replica's channel. It fails when msg
// is too large, Redis cannot be reached, or no replica of that name listens.
func (r *Relay) Forward(ctx context.Context, replica, session string, msg []byte) error {
	b, err := json.Marshal(relayed{Session: session, Msg: msg})
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if len(b) > r.max {
		return fmt.Errorf("relay: answer of %d bytes is over the %d-byte bound", len(b), r.max)
	}
	n, err := r.conn.Client().Publish(ctx, r.channel(replica), b).Result()
	r.conn.Observe(err)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	if n == 0 {
		return errors.New("relay: no replica of that name is listening")
	}
	return nil
}

// Receive adds deliver as a receiver of the answers forwarded here.
func (r *Relay) Receive(deliver func(session string, msg []byte)) (cancel func()) {
	r.mu.Lock()
	r.next++
	id := r.next
	r.handlers[id] = deliver
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.handlers, id)
		r.mu.Unlock()
	}
}

// Close ends the subscription; it may be called more than once.
func (r *Relay) Close() { r.sub.close() }

// receive hands one published answer to every receiver (each looks for the
// session among its own).
func (r *Relay) receive(payload string) {
	if len(payload) > r.max {
		return
	}
	var m relayed
	if err := json.Unmarshal([]byte(payload), &m); err != nil || m.Session == "" {
		r.log.Debug("relayed answer not understood")
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, f := range r.handlers {
		f(m.Session, m.Msg)
	}
}

func (r *Relay) channel(replica string) string { return r.prefix + "relay:" + replica }
