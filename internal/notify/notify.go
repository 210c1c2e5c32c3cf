package notify

import (
	"encoding/json"
	"sync"
)

// Event is one notification an upstream server sent outside any operation.
type Event struct {
	// Server is the configured name of the server that sent it.
	Server string
	// Session is the upstream session's notification key (see
	// upstream.OwnerKey): whose credentials or which owner it belongs to.
	Session string
	// Method is the notification's method.
	Method string
	// Params are the notification's params as received.
	Params json.RawMessage
}

// Hub carries events from publishers to subscribers.
type Hub interface {
	// Publish delivers e to every current subscriber, in subscription
	// order, before it returns; subscribers must not block.
	Publish(e Event)
	// Subscribe adds f as a subscriber until cancel is called.
	Subscribe(f func(Event)) (cancel func())
}

// Memory is a Hub within one process.
type Memory struct {
	mu   sync.RWMutex
	next uint64
	subs []subscriber
}

type subscriber struct {
	id uint64
	f  func(Event)
}

// NewMemory returns an empty in-process hub.
func NewMemory() *Memory { return &Memory{} }

// Publish calls every subscriber with e.
func (m *Memory) Publish(e Event) {
	m.mu.RLock()
	subs := m.subs
	m.mu.RUnlock()
	for _, s := range subs {
		s.f(e)
	}
}

// Subscribe adds f; cancel removes it and may be called more than once.
func (m *Memory) Subscribe(f func(Event)) (cancel func()) {
	m.mu.Lock()
	m.next++
	id := m.next
	// Copy on write: Publish iterates a snapshot without holding the lock.
	m.subs = append(m.subs[:len(m.subs):len(m.subs)], subscriber{id: id, f: f})
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		out := make([]subscriber, 0, len(m.subs))
		for _, s := range m.subs {
			if s.id != id {
				out = append(out, s)
			}
		}
		m.subs = out
	}
}
