package app

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/notify"
	"github.com/mcpgw/mcpgw/internal/redisconn"
	"github.com/mcpgw/mcpgw/internal/sharedstate"
)

// defaultRedisPrefix starts every key and channel the replicas share in Redis.
const defaultRedisPrefix = "mcpgw:"

// replicaState is the state replicas share: through Redis when one is
// configured, else in this process (a replica on its own).
type replicaState struct {
	hub        notify.Hub
	tombstones front.Tombstones
	relay      front.Relay // nil without Redis
	close      func()      // ends the Redis subscriptions; safe to call more than once
}

// newReplicaState builds the shared state over rc (nil: in memory) under
// defaultRedisPrefix. A hub given with WithHub is kept as it is.
func newReplicaState(rc *redisconn.Conn, hub notify.Hub, log *slog.Logger) replicaState {
	prefix := defaultRedisPrefix
	rs := replicaState{hub: hub, tombstones: front.NewMemoryTombstones(front.DefaultMaxDeletedSessions), close: func() {}}
	if rc == nil {
		if rs.hub == nil {
			rs.hub = notify.NewMemory()
		}
		return rs
	}
	name := replicaName()
	rs.tombstones = sharedstate.NewTombstones(rc, prefix, front.DefaultMaxDeletedSessions)
	relay := sharedstate.NewRelay(rc, prefix, name, log)
	rs.relay = relay
	closers := []func(){relay.Close}
	if rs.hub == nil {
		h := sharedstate.NewHub(rc, prefix, name, log)
		rs.hub = h
		closers = append(closers, h.Close)
	}
	rs.close = func() {
		for _, c := range closers {
			c()
		}
	}
	log.Info("replica state shared through redis", "replica", name)
	return rs
}

// replicaName is a name no other replica has: it routes legacy callers'
// answers to the replica holding their request and tags this replica's
// notifications.
func replicaName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
