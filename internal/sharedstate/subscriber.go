package sharedstate

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// Timing of a subscription's connection (see the package doc).
const (
	// pingIdle is how long a subscription waits for a message before it
	// pings, so that a connection that silently died is noticed.
	pingIdle = 15 * time.Second
	// retryMin and retryMax bound the wait between attempts to reconnect.
	retryMin = 100 * time.Millisecond
	retryMax = 2 * time.Second
)

// subscriber holds one Redis subscription to channel: a goroutine receives
// its messages and hands each payload to handle, reconnecting (and so
// subscribing again) after Redis went away, until close.
type subscriber struct {
	conn    *redisconn.Conn
	ps      *redis.PubSub
	channel string
	handle  func(payload string)
	log     *slog.Logger
	stop    chan struct{}
	done    chan struct{}
}

// subscribe starts receiving channel's messages; close ends it.
func subscribe(conn *redisconn.Conn, channel string, log *slog.Logger, handle func(payload string)) *subscriber {
	s := &subscriber{conn: conn, channel: channel, handle: handle, log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
	s.ps = conn.Client().Subscribe(context.Background()) // no channel yet: does not dial
	go s.run()
	return s
}

// run receives until close; a panic in handle is logged and the loop goes on.
func (s *subscriber) run() {
	defer close(s.done)
	// Subscribing dials, which may wait the dial timeout on a Redis that is
	// down; here it does not hold up the caller. The channel is recorded
	// even when it fails: every reconnection subscribes to it again.
	if err := s.ps.Subscribe(context.Background(), s.channel); err != nil {
		s.observe(err)
	}
	wait := retryMin
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		ok := s.receive()
		if ok {
			wait = retryMin
			continue
		}
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// receive takes one message from the subscription and handles it; false
// means Redis could not be reached and the caller waits before trying again.
func (s *subscriber) receive() (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("recovered from a panic; still subscribed", append([]any{"in", "redis subscription " + s.channel}, panics.Attrs(v)...)...)
			ok = true
		}
	}()
	msg, err := s.ps.ReceiveTimeout(context.Background(), pingIdle)
	if err != nil {
		select {
		case <-s.stop:
			return false // closed: not an outage
		default:
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// Quiet, not necessarily dead: a ping's answer (or its failure)
			// comes with the next receive.
			if perr := s.ps.Ping(context.Background()); perr != nil {
				s.observe(perr)
				return false
			}
			return true
		}
		s.observe(err)
		return false
	}
	s.conn.Observe(nil)
	if m, isMsg := msg.(*redis.Message); isMsg {
		s.handle(m.Payload)
	}
	return true
}

// close ends the subscription and waits for its goroutine.
func (s *subscriber) close() {
	select {
	case <-s.stop:
		<-s.done
		return
	default:
	}
	close(s.stop)
	_ = s.ps.Close()
	<-s.done
}

// observe records a failure in the Conn's health unless the subscriber is
// closing (its own Close is not an outage).
func (s *subscriber) observe(err error) {
	select {
	case <-s.stop:
	default:
		s.conn.Observe(err)
	}
}
