package sharedstate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/redisconn"
)

// tombTimeout bounds one tombstone command: the legacy request that asks
// waits for it (the front does not hold its session lock meanwhile).
const tombTimeout = 500 * time.Millisecond

// Tombstones is front.Tombstones shared by every replica through Redis: one
// key per ended session (prefix + "tomb:" + the id's SHA-256), set with NX
// to keep the first record and expiring at the id's until. A record of this
// replica's own burials answers first; while Redis cannot be reached it is
// the only record (single-replica semantics), and the outage is logged once
// by the Conn.
type Tombstones struct {
	conn   *redisconn.Conn
	prefix string
	local  *front.MemoryTombstones
	now    func() time.Time
}

var _ front.LocalTombstones = (*Tombstones)(nil)

// NewTombstones returns tombstones kept in conn's Redis under prefix, with
// a local record of at most max ids (max ≤ 0: front.DefaultMaxDeletedSessions).
func NewTombstones(conn *redisconn.Conn, prefix string, max int) *Tombstones {
	return &Tombstones{conn: conn, prefix: prefix, local: front.NewMemoryTombstones(max), now: time.Now}
}

// Bury remembers id as ended until until, here and in Redis. Redis being
// unreachable is not an error (the burial holds on this replica); an error
// answer from Redis is.
func (t *Tombstones) Bury(ctx context.Context, id string, until time.Time) error {
	_ = t.local.Bury(ctx, id, until)
	if !until.After(t.now()) || !t.conn.Try() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, tombTimeout)
	defer cancel()
	err := t.conn.Client().Do(ctx, "SET", t.key(id), "1", "PXAT", until.UnixMilli(), "NX").Err()
	t.observe(err)
	if err != nil && !redisconn.Unavailable(err) && !isNil(err) {
		return fmt.Errorf("redis tombstone: %w", err)
	}
	return nil
}

// BuryHere remembers id as ended until until on this replica only (a
// session this replica ended for reasons of its own, which another may
// still serve).
func (t *Tombstones) BuryHere(ctx context.Context, id string, until time.Time) error {
	return t.local.Bury(ctx, id, until)
}

// Buried reports whether id was buried here or, through Redis, on any
// replica. Redis being unreachable answers from this replica alone; an
// error answer from Redis is an error (the front then treats the session
// as ended).
func (t *Tombstones) Buried(ctx context.Context, id string) (bool, error) {
	if gone, _ := t.local.Buried(ctx, id); gone {
		return true, nil
	}
	if !t.conn.Try() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, tombTimeout)
	defer cancel()
	n, err := t.conn.Client().Exists(ctx, t.key(id)).Result()
	t.observe(err)
	switch {
	case err == nil:
		return n > 0, nil
	case redisconn.Unavailable(err):
		return false, nil
	default:
		return false, fmt.Errorf("redis tombstone: %w", err)
	}
}

// key is id's Redis key: ids are long sealed tokens, so the key holds
// their digest.
func (t *Tombstones) key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return t.prefix + "tomb:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// observe records a command's outcome in the Conn's health.
func (t *Tombstones) observe(err error) {
	if isNil(err) {
		err = nil
	}
	t.conn.Observe(err)
}
