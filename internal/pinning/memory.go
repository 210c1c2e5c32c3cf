package pinning

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/mcpgw/mcpgw/internal/store"
)

// maxMemoryEvents bounds the audit rows a MemoryStore keeps; the oldest go first.
const maxMemoryEvents = 1000

// MemoryStore keeps pins in this process (a gateway without a data dir): they do not
// survive a restart.
type MemoryStore struct {
	mu     sync.Mutex
	pins   map[string]store.ToolPin // server\x00tool
	events []store.PinEvent
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{pins: map[string]store.ToolPin{}} }

// ListToolPins returns server's pins (every server's when server is ""), by server and tool.
func (m *MemoryStore) ListToolPins(_ context.Context, server string) ([]store.ToolPin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.ToolPin
	for _, p := range m.pins {
		if server == "" || p.Server == server {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b store.ToolPin) int {
		return strings.Compare(a.Server+"\x00"+a.Tool, b.Server+"\x00"+b.Tool)
	})
	return out, nil
}

// PutToolPins writes pins (keeping rows already there unless overwrite) and keeps events.
func (m *MemoryStore) PutToolPins(_ context.Context, pins []store.ToolPin, events []store.PinEvent, overwrite bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pins {
		k := p.Server + "\x00" + p.Tool
		if _, ok := m.pins[k]; ok && !overwrite {
			continue
		}
		m.pins[k] = p
	}
	m.keepLocked(events)
	return nil
}

// DeleteToolPins removes server's pins of tools (all when tools is nil).
func (m *MemoryStore) DeleteToolPins(_ context.Context, server string, tools []string, events []store.PinEvent) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, p := range m.pins {
		if p.Server == server && (tools == nil || slices.Contains(tools, p.Tool)) {
			delete(m.pins, k)
			n++
		}
	}
	m.keepLocked(events)
	return n, nil
}

// ListPinEvents returns server's latest audit rows (every server's when server is ""),
// newest first, at most limit.
func (m *MemoryStore) ListPinEvents(_ context.Context, server string, limit int) ([]store.PinEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.PinEvent
	for i := len(m.events) - 1; i >= 0 && len(out) < limit; i-- {
		if server == "" || m.events[i].Server == server {
			out = append(out, m.events[i])
		}
	}
	return out, nil
}

// Events returns the audit rows kept, oldest first.
func (m *MemoryStore) Events() []store.PinEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

func (m *MemoryStore) keepLocked(events []store.PinEvent) {
	m.events = append(m.events, events...)
	if over := len(m.events) - maxMemoryEvents; over > 0 {
		m.events = slices.Delete(m.events, 0, over)
	}
}
