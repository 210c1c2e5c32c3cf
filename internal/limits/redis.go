package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is how long a slot taken in Redis is held without renewal: a
// replica renews its slots every DefaultLease/3 while their requests run, so
// a replica that dies frees its slots within DefaultLease.
const DefaultLease = 30 * time.Second

// DefaultPrefix is what every Redis key of the limits starts with.
const DefaultPrefix = "mcpgw:limit:"

// maxRenewBatch bounds the slots one renewal script touches.
const maxRenewBatch = 500

// admitScript decides and counts one request against several checks, all or
// nothing, in one round trip.
//
// KEYS: one per check. ARGV: now in microseconds ("" for the server's clock),
// the lease in microseconds, the request's token, then per check its limit,
// its window in microseconds (0: in flight) and force ("1" or "0").
// A window is a sorted set of the admitted requests' times; a slot set holds
// each request in flight with the time its lease ends. Returns {0, then per
// check remaining and reset in microseconds} when admitted, {i, retry in
// microseconds} when check i (1-based) refused.
const admitScript = `
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local lease = tonumber(ARGV[2])
local token = ARGV[3]
local n = #KEYS
local out = {0}
for i = 1, n do
  local key = KEYS[i]
  local limit = tonumber(ARGV[1 + 3 * i])
  local window = tonumber(ARGV[2 + 3 * i])
  local force = ARGV[3 + 3 * i] == '1'
  if window > 0 then
    if limit <= 0 then return {i, window} end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    local live = redis.call('ZCARD', key)
    if live >= limit then
      local cut = redis.call('ZRANGE', key, live - limit, live - limit, 'WITHSCORES')
      return {i, tonumber(cut[2]) + window - now}
    end
    out[2 * i] = limit - live - 1
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    local live = redis.call('ZCARD', key)
    if live >= limit and not force then return {i, 0} end
    out[2 * i] = math.max(limit - live - 1, 0)
  end
end
for i = 1, n do
  local key = KEYS[i]
  local window = tonumber(ARGV[2 + 3 * i])
  if window > 0 then
    redis.call('ZADD', key, now, token .. ':' .. i)
    redis.call('PEXPIRE', key, math.floor(window / 1000) + 1000)
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    out[2 * i + 1] = math.max(tonumber(oldest[2]) + window - now, 0)
  else
    redis.call('ZADD', key, now + lease, token)
    redis.call('PEXPIRE', key, math.floor(lease / 1000) * 2)
    out[2 * i + 1] = 0
  end
end
return out
`

// renewScript extends the leases of slots still held: KEYS are slot sets,
// ARGV the lease in microseconds then each key's token. A lease that
// already ended (the slot was freed) is not taken again.
const renewScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + lease, ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], math.floor(lease / 1000) * 2)
end
return #KEYS
`

// Redis is a Gate (and a Counter) whose counts live in Redis, shared by
// every replica using the same Redis and prefix. Each Admit is one script,
// one round trip; each Release one command. Slots are leases renewed by a
// goroutine (Close ends it) while their requests run.
type Redis struct {
	client   redis.Scripter
	prefix   string
	lease    time.Duration
	useClock bool // decide by the caller's time instead of the server's
	log      *slog.Logger

	admit, renew *redis.Script
	id           string // this process's part of every token
	seq          atomic.Uint64

	mu   sync.Mutex
	held map[heldSlot]struct{}

	stop chan struct{}
	done chan struct{}
}

// heldSlot is one slot this process holds: its set's key and its token.
type heldSlot struct{ key, token string }

// RedisOptions tune a Redis gate; the zero value is the default.
type RedisOptions struct {
	// Prefix starts every key (DefaultPrefix when empty).
	Prefix string
	// Lease is how long a slot is held without renewal (DefaultLease when 0).
	Lease time.Duration
	// CallerClock decides windows by the time Admit is given instead of the
	// Redis server's clock (tests; with several replicas, the server's
	// clock is the one all agree on).
	CallerClock bool
	// Log receives renewal failures at DEBUG.
	Log *slog.Logger
}

// NewRedis returns a Redis gate over client and starts its renewal
// goroutine; Close stops it.
func NewRedis(client redis.Scripter, o RedisOptions) *Redis {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	raw := make([]byte, 8)
	_, _ = rand.Read(raw)
	r := &Redis{client: client, prefix: o.Prefix, lease: o.Lease, useClock: o.CallerClock, log: o.Log,
		admit: redis.NewScript(admitScript), renew: redis.NewScript(renewScript), id: hex.EncodeToString(raw),
		held: make(map[heldSlot]struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go r.renewLoop()
	return r
}

// Close stops renewing leases (slots still held then expire within the
// lease). It does not close the client.
func (r *Redis) Close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// Admit decides one request against checks in one script.
func (r *Redis) Admit(ctx context.Context, checks []Check, now time.Time) (*Admission, error) {
	if len(checks) == 0 {
		return &Admission{Refused: -1}, nil
	}
	token := r.id + ":" + strconv.FormatUint(r.seq.Add(1), 36)
	keys := make([]string, len(checks))
	args := make([]any, 0, 3+3*len(checks))
	at := ""
	if r.useClock {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	args = append(args, at, r.lease.Microseconds(), token)
	for i, c := range checks {
		keys[i] = r.prefix + "w:" + c.Key
		if c.InFlight() {
			keys[i] = r.prefix + "s:" + c.Key
		}
		force := "0"
		if c.Force {
			force = "1"
		}
		w := int64(0)
		if !c.InFlight() {
			w = max(c.Window.Microseconds(), 1)
		}
		args = append(args, c.Limit, w, force)
	}
	vals, err := r.admit.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		if ctx.Err() != nil { // the caller left mid-script, which may have taken places: give them back
			r.releaseTaken(checks, keys, token)
		}
		return nil, fmt.Errorf("limits: redis admit: %w", err)
	}
	if len(vals) == 0 || len(vals) < 2 && vals[0] != 0 || vals[0] < 0 || vals[0] > int64(len(checks)) {
		return nil, fmt.Errorf("limits: redis admit: unexpected answer %v", vals)
	}
	if vals[0] != 0 {
		return &Admission{Refused: int(vals[0] - 1), RetryAfter: time.Duration(vals[1]) * time.Microsecond}, nil
	}
	if len(vals) != 1+2*len(checks) {
		return nil, fmt.Errorf("limits: redis admit: unexpected answer %v", vals)
	}
	a := &Admission{Refused: -1, Remaining: make([]int, len(checks)), Reset: make([]time.Duration, len(checks))}
	var slots []heldSlot
	for i, c := range checks {
		a.Remaining[i] = int(vals[1+2*i])
		a.Reset[i] = time.Duration(vals[2+2*i]) * time.Microsecond
		if c.InFlight() {
			slots = append(slots, heldSlot{keys[i], token})
		}
	}
	if len(slots) > 0 {
		r.hold(slots)
		var once sync.Once
		a.release = func() { once.Do(func() { r.free(slots) }) }
	}
	return a, nil
}

// Take counts one request by key against limit per window (Counter).
func (r *Redis) Take(ctx context.Context, key string, limit int, window time.Duration, now time.Time) (Decision, error) {
	if limit <= 0 || window <= 0 {
		return Decision{}, fmt.Errorf("limits: %d requests per %s: both must be positive", limit, window)
	}
	a, err := r.Admit(ctx, []Check{{Key: key, Limit: limit, Window: window}}, now)
	if err != nil {
		return Decision{}, err
	}
	if !a.Allowed() {
		return Decision{RetryAfter: a.RetryAfter}, nil
	}
	return Decision{Allowed: true, Remaining: a.Remaining[0]}, nil
}

func (r *Redis) hold(slots []heldSlot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range slots {
		r.held[s] = struct{}{}
	}
}

// free gives slots back: forgotten here at once, removed from Redis by one
// command (should that fail, the lease ends them).
// releaseTaken frees the in-flight places an admission whose answer was
// lost may have taken (removing a place never taken does nothing).
func (r *Redis) releaseTaken(checks []Check, keys []string, token string) {
	var slots []heldSlot
	for i, c := range checks {
		if c.InFlight() {
			slots = append(slots, heldSlot{keys[i], token})
		}
	}
	if len(slots) > 0 {
		r.free(slots)
	}
}

func (r *Redis) free(slots []heldSlot) {
	r.mu.Lock()
	for _, s := range slots {
		delete(r.held, s)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, ok := r.client.(redis.Cmdable)
	if !ok {
		return
	}
	if len(slots) == 1 {
		if err := c.ZRem(ctx, slots[0].key, slots[0].token).Err(); err != nil {
			r.log.Debug("limits: slot not freed in redis; its lease ends it", "error", err.Error())
		}
		return
	}
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, s := range slots {
			p.ZRem(ctx, s.key, s.token)
		}
		return nil
	})
	if err != nil {
		r.log.Debug("limits: slots not freed in redis; their leases end them", "error", err.Error())
	}
}

// renewLoop renews the leases of held slots every lease/3 until Close.
func (r *Redis) renewLoop() {
	defer close(r.done)
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("limits: lease renewal stopped", "panic", fmt.Sprint(p))
		}
	}()
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.renewHeld()
		}
	}
}

// renewHeld renews every held slot's lease, maxRenewBatch per script.
func (r *Redis) renewHeld() {
	r.mu.Lock()
	slots := make([]heldSlot, 0, len(r.held))
	for s := range r.held {
		slots = append(slots, s)
	}
	r.mu.Unlock()
	for len(slots) > 0 {
		batch := slots[:min(len(slots), maxRenewBatch)]
		slots = slots[len(batch):]
		keys := make([]string, len(batch))
		args := make([]any, 0, 1+len(batch))
		args = append(args, r.lease.Microseconds())
		for i, s := range batch {
			keys[i] = s.key
			args = append(args, s.token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.lease/3)
		err := r.renew.Run(ctx, r.client, keys, args...).Err()
		cancel()
		if err != nil {
			r.log.Debug("limits: slot leases not renewed", "slots", len(batch), "error", err.Error())
		}
	}
}
