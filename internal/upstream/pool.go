package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Pool defaults (see Config.MaxSessions and Config.SessionIdle).
const (
	DefaultMaxSessions = 256
	DefaultSessionIdle = 5 * time.Minute
	// DefaultMaxOwnedSessions bounds the sessions of single callers
	// (Interactions.Owner) on an HTTP or SSE upstream.
	DefaultMaxOwnedSessions = 128
	// DefaultMaxOwnedStdio bounds them on a stdio upstream, where each is a
	// child process.
	DefaultMaxOwnedStdio = 16
	// maxRetiring bounds the evicted sessions being ended in the background;
	// beyond it, whoever evicts ends the session itself.
	maxRetiring = 16
)

// PoolFullError means every pooled upstream session was in use (a call in
// flight, or followed) when a call needed a new one: none could be evicted.
// It is retryable.
type PoolFullError struct{}

// Error implements error.
func (e *PoolFullError) Error() string {
	return "too many upstream sessions in use; retry later"
}

// poolState is the pool's bookkeeping of one session, guarded by Client.mu.
type poolState struct {
	users     int       // calls in flight, setups and follows holding it
	followers int       // follows among users
	lastUsed  time.Time // when the last user let go
	// endIdle ends the session, rather than keeping it idle, when its last
	// user lets go: its last follower left and its connection is a listener
	// of its own (transport.standing).
	endIdle bool
}

// useLocked marks a pooled session as held (not evictable) until unuse.
// c.mu is held.
func (c *Client) useLocked(s *session) { s.pool.users++ }

// unuse lets go of a session taken by lookup or Follow. A session nobody
// holds becomes idle: it is evicted after SessionIdle, or earlier when the
// pool is full and a new one is needed.
func (c *Client) unuse(s *session) {
	c.mu.Lock()
	s.pool.users--
	if s.pool.users == 0 && s.pool.endIdle && !c.closed && c.sessions[s.key] == s {
		delete(c.sessions, s.key)
		c.mu.Unlock()
		c.retire(s)
		return
	}
	defer c.mu.Unlock()
	if s.pool.users > 0 {
		return
	}
	s.pool.lastUsed = time.Now()
	if c.sweep == nil && !c.closed && c.sessions[s.key] == s {
		c.sweep = time.AfterFunc(c.cfg.SessionIdle, c.sweepIdle)
	}
}

// evictLocked removes the least recently used idle session (among those
// match accepts; nil accepts all) from the pool and returns it (for
// retire), or nil when every such session is in use.
func (c *Client) evictLocked(match func(*session) bool) *session {
	var victim *session
	for _, s := range c.sessions {
		if match != nil && !match(s) {
			continue
		}
		if s.pool.users == 0 && (victim == nil || s.pool.lastUsed.Before(victim.pool.lastUsed)) {
			victim = s
		}
	}
	if victim != nil {
		delete(c.sessions, victim.key)
	}
	return victim
}

// ownedLocked counts the pooled sessions of one caller (Interactions.Owner).
// It runs only when a session is created. c.mu is held.
func (c *Client) ownedLocked() int {
	n := 0
	for _, s := range c.sessions {
		if s.owned() {
			n++
		}
	}
	return n
}

// sweepIdle evicts the sessions idle for SessionIdle and arms itself again
// for the next one to become due.
func (c *Client) sweepIdle() {
	defer c.recoverPanic("idle session sweep", nil)
	now := time.Now()
	var victims []*session
	var next time.Duration
	c.mu.Lock()
	c.sweep = nil
	if c.closed {
		c.mu.Unlock()
		return
	}
	for key, s := range c.sessions {
		if s.pool.users > 0 {
			continue
		}
		if due := s.pool.lastUsed.Add(c.cfg.SessionIdle).Sub(now); due > 0 {
			if next == 0 || due < next {
				next = due
			}
			continue
		}
		delete(c.sessions, key)
		victims = append(victims, s)
	}
	if next > 0 {
		c.sweep = time.AfterFunc(next, c.sweepIdle)
	}
	c.mu.Unlock()
	for _, s := range victims {
		c.retire(s)
	}
}

// retire ends an evicted session (DELETE for HTTP sessions): in the
// background, up to maxRetiring at once, else in the caller's goroutine.
func (c *Client) retire(s *session) {
	end := func() {
		defer c.recoverPanic("ending an evicted session", nil)
		ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
		defer cancel()
		if err := s.close(ctx); err != nil {
			c.cfg.Logger.Debug("ending an evicted upstream session failed", "err", causeText(err))
		}
	}
	select {
	case c.retiring <- struct{}{}:
		go func() {
			defer func() { <-c.retiring }()
			end()
		}()
	default:
		end()
	}
}

// ErrCredentialLost is the cause (context.Cause) of a follow's end when the
// credential it depends on was lost: a renewal of the minted token was
// refused, granted fewer scopes than the follow started with, or failed
// until no unexpired token was left.
var ErrCredentialLost = errors.New("upstream credential lost: its renewal was refused, narrowed or ran out")

// ErrFollowEnded is the cause (context.Cause) of a follow's end when the
// upstream session it followed ended, or the channel carrying that session's
// notifications did: what the upstream sends outside requests no longer
// reaches the follower.
var ErrFollowEnded = errors.New("the followed upstream session ended")

// FollowContext holds the pooled session for opts until release is called:
// it is not evicted; for a legacy streamable HTTP session its GET stream (on
// which the upstream sends list_changed and resource updates outside any
// request, see Config.OnNotification) is open, and closed streamLinger
// after the last follower and call let go; a legacy HTTP+SSE session, whose
// connection is the session, is ended once its last follower and call have
// left. A minted credential the session uses (no Options.Token) is renewed
// proactively while anyone follows. The returned context ends when ctx does,
// at release, when the session or its notification channel ends (cause
// ErrFollowEnded) or when the credential is lost (cause
// ErrCredentialLost). When the channel fails to open (the GET stream's
// request failed), FollowContext fails with ErrFollowEnded carrying that
// failure instead; an upstream that offers no GET stream (405) is followed
// without one. Owners of downstream sessions, listens and
// subscriptions that follow an upstream call it, and end what they serve
// with that context.
func (c *Client) FollowContext(ctx context.Context, opts Options) (context.Context, func(), error) {
	s, err := c.session(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	lost, unfollow, standing := s.follow(ctx)
	if lost != nil && lost.Err() != nil {
		// The channel did not open (the GET stream failed): a follow now
		// would hear nothing.
		unfollow()
		c.unuse(s)
		return nil, nil, followFailed(context.Cause(lost))
	}
	c.mu.Lock()
	s.pool.followers++
	s.pool.endIdle = false
	c.mu.Unlock()
	fctx, cancel := context.WithCancelCause(ctx)
	ended := func() { cancel(ErrFollowEnded) }
	stops := []func() bool{context.AfterFunc(s.life, ended)}
	if lost != nil {
		stops = append(stops, context.AfterFunc(lost, ended))
	}
	unwatch := func() {}
	if opts.Token == "" {
		unwatch = c.watch.hold(func() { cancel(ErrCredentialLost) })
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			cancel(context.Canceled)
			for _, stop := range stops {
				stop()
			}
			unwatch()
			unfollow()
			c.mu.Lock()
			s.pool.followers--
			if s.pool.followers == 0 && standing {
				s.pool.endIdle = true
			}
			c.mu.Unlock()
			c.unuse(s)
		})
	}
	return fctx, release, nil
}

// followFailed is the error of a follow whose channel failed to open: an
// ErrFollowEnded, carrying the failure when there is one.
func followFailed(cause error) error {
	if cause == nil || errors.Is(cause, ErrFollowEnded) || errors.Is(cause, context.Canceled) {
		return ErrFollowEnded
	}
	return fmt.Errorf("%w: %w", ErrFollowEnded, cause)
}

// session returns the ready session for these options, creating it (and
// running the handshake or probe) when needed, held until the caller calls
// unuse. A session is never set up twice: one that failed, ended or was
// closed is replaced by a new one.
func (c *Client) session(ctx context.Context, opts Options) (*session, error) {
	for {
		s, created, err := c.lookup(opts)
		if err != nil {
			return nil, err
		}
		err = s.setup(ctx)
		if err == nil {
			if !created && s.expired() {
				c.unuse(s)
				c.drop(s) // the upstream ended it since: start another
				continue
			}
			return s, nil
		}
		c.unuse(s)
		if s.gone() {
			c.drop(s)
		}
		if errors.Is(err, errSessionGone) {
			// Another caller's setup failed, or the session was closed,
			// while we waited: look again.
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			continue
		}
		if c.deps.era.auto && ctx.Err() == nil {
			// The upstream failed the probe or handshake (not the caller
			// giving up): find its era again next time.
			c.deps.era.forget()
		}
		return nil, err
	}
}

// lookup returns the pooled session for these options, held (see unuse),
// creating it (not yet set up) when there is none. A full pool makes room
// by evicting its least recently used idle session; when every session is
// in use, the call is refused with a PoolFullError rather than evict one a
// call is using.
func (c *Client) lookup(opts Options) (s *session, created bool, err error) {
	caps, capKey := opts.Interactions.capabilities(c.cfg.Offer)
	owner := ownerOf(opts)
	// The key is assembled in a buffer of this frame: a call that finds its
	// session (most) makes no string of it (a caller's credentials are still
	// digested, which allocates).
	var kb [128]byte
	k := kb[:0]
	if c.deps.legacyCallerSession(opts) {
		k = append(k, "legacy|"...)
	}
	k = append(append(append(k, capKey...), '|'), OwnerKey(credentialDigest(opts.Header, opts.Token), owner)...)
	var victim *session
	defer func() {
		if victim != nil {
			c.retire(victim)
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, false, ErrClosed
	}
	if s = c.sessions[string(k)]; s != nil {
		c.useLocked(s)
		return s, false, nil
	}
	switch {
	case owner != "" && c.ownedLocked() >= c.cfg.MaxOwnedSessions:
		// Callers' own sessions make room among themselves, so they can
		// never crowd out the shared ones.
		if victim = c.evictLocked(func(s *session) bool { return s.owned() }); victim == nil {
			return nil, false, &PoolFullError{}
		}
	case len(c.sessions) >= c.cfg.MaxSessions:
		if victim = c.evictLocked(nil); victim == nil {
			return nil, false, &PoolFullError{}
		}
	}
	key := string(k)
	s = newSession(c.deps, key, caps, opts, false)
	c.sessions[key] = s
	c.useLocked(s)
	return s, true, nil
}

// drop forgets a pooled session (it has ended or failed) and releases it.
// Only the one who removes it from the pool releases it: a session already
// replaced, or taken by Close, belongs to someone else.
func (c *Client) drop(s *session) {
	c.mu.Lock()
	removed := c.sessions[s.key] == s
	if removed {
		delete(c.sessions, s.key)
	}
	c.mu.Unlock()
	if removed {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
		defer cancel()
		_ = s.close(ctx)
	}
}
