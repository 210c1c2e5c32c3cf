package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// Session bounds: how many sessions are kept at once, how long one lives
// unused and how long it lives at most.
const (
	DefaultMaxSessions = 1000
	DefaultIdle        = 30 * time.Minute
	DefaultLifetime    = 12 * time.Hour
)

// session is one signed-in browser: the key it signed in with (kept only
// here, in memory, to act as that identity), or for a sign-in through the
// OpenID provider the verified ID token's claims and its expiry; its CSRF
// token and its times.
type session struct {
	key      string
	claims   map[string]any // an SSO session's verified ID token claims; nil for a key's
	expires  time.Time      // an SSO session's ID token expiry; zero for a key's
	csrf     string
	who      string
	created  time.Time
	lastUsed time.Time
}

// Sessions is the bounded, process-wide set of UI sessions, shared by every
// generation of the gateway. The zero value is not usable; use NewSessions.
type Sessions struct {
	mu       sync.Mutex
	byID     map[string]*session
	max      int
	idle     time.Duration
	lifetime time.Duration
	now      func() time.Time
}

// NewSessions returns an empty set holding at most max sessions (≤ 0:
// DefaultMaxSessions), each ending after idle unused (≤ 0: DefaultIdle) or
// lifetime after sign-in (≤ 0: DefaultLifetime).
func NewSessions(max int, idle, lifetime time.Duration) *Sessions {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if idle <= 0 {
		idle = DefaultIdle
	}
	if lifetime <= 0 {
		lifetime = DefaultLifetime
	}
	return &Sessions{byID: make(map[string]*session), max: max, idle: idle, lifetime: lifetime, now: time.Now}
}

// randomToken is 32 random bytes, hex.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the process instead)
	return hex.EncodeToString(b[:])
}

// create starts a session for key and returns its id. Expired sessions go
// first; when the set is still full the least recently used one goes.
func (s *Sessions) create(key, who string) (id string, sess *session) {
	return s.add(&session{key: key, who: who})
}

// createSSO starts a session for an identity signed in through the OpenID
// provider: it ends at the ID token's expiry at the latest, never later.
func (s *Sessions) createSSO(claims map[string]any, who string, expires time.Time) (id string, sess *session) {
	return s.add(&session{claims: claims, who: who, expires: expires})
}

func (s *Sessions) add(sess *session) (id string, _ *session) {
	now := s.now()
	sess.csrf, sess.created, sess.lastUsed = randomToken(), now, now
	id = randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	for len(s.byID) >= s.max {
		s.evictOldest()
	}
	s.byID[id] = sess
	return id, sess
}

// get returns the live session id names (marking it used), or nil.
func (s *Sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.byID[id]
	if sess == nil {
		return nil
	}
	if s.expired(sess, now) {
		delete(s.byID, id)
		return nil
	}
	sess.lastUsed = now
	return sess
}

// end forgets the session id names.
func (s *Sessions) end(id string) {
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
}

// Len is the number of sessions held (expired ones not yet swept included).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

func (s *Sessions) expired(sess *session, now time.Time) bool {
	return now.Sub(sess.lastUsed) > s.idle || now.Sub(sess.created) > s.lifetime ||
		(!sess.expires.IsZero() && !now.Before(sess.expires))
}

func (s *Sessions) sweep(now time.Time) {
	for id, sess := range s.byID {
		if s.expired(sess, now) {
			delete(s.byID, id)
		}
	}
}

func (s *Sessions) evictOldest() {
	var oldest string
	var at time.Time
	for id, sess := range s.byID {
		if oldest == "" || sess.lastUsed.Before(at) {
			oldest, at = id, sess.lastUsed
		}
	}
	delete(s.byID, oldest)
}

// csrfOK reports whether token is the session's CSRF token.
func (sess *session) csrfOK(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(sess.csrf)) == 1
}
