package pinning

import (
	"context"
	"slices"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// Approve pins server's current definitions on an admin's word (actor names the admin in
// the audit rows). With tools nil the whole server is pinned: its own row is written, every
// quarantined tool's new definition is approved and every tool of its last listing not yet
// pinned is pinned as listed. Otherwise only the named tools: a quarantined one's new
// definition is approved, one listed before is pinned as listed, one never listed is pinned
// when it is next listed. It returns the server's pins as stored.
func (p *Pinner) Approve(ctx context.Context, server string, tools []string, actor string) ([]store.ToolPin, error) {
	p.forget(server)
	st := p.load(ctx, server)
	now := p.cfg.Now()
	var pins []store.ToolPin
	var events []store.PinEvent
	add := func(pin store.ToolPin, event string) {
		pin.UpdatedAt, pin.UpdatedBy = now, actor
		pins = append(pins, pin)
		events = append(events, store.PinEvent{Server: server, Tool: pin.Tool, Event: event, Changed: pin.Changed, Actor: actor, At: now})
	}
	p.mu.Lock()
	names := tools
	if tools == nil {
		add(store.ToolPin{Server: server}, "pinned")
		for name := range st.pins {
			names = append(names, name)
		}
		for name := range st.seen {
			names = append(names, name)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		pin, has := st.pins[name]
		d, seen := st.seen[name]
		switch {
		case has && pin.Quarantine != "":
			changed := pin.Changed
			pin = store.ToolPin{Server: server, Tool: name, Digest: pin.PendingDigest, Parts: pin.PendingParts, Changed: changed}
			add(pin, "approved")
		case has && pin.Digest != "" && tools == nil:
			// pinned already, as approved
		case seen:
			add(store.ToolPin{Server: server, Tool: name, Digest: d.Digest, Parts: d.Parts}, "pinned")
		case !has:
			add(store.ToolPin{Server: server, Tool: name}, "pinned")
		}
	}
	p.mu.Unlock()
	if len(pins) > 0 {
		if err := p.cfg.Store.PutToolPins(ctx, pins, events, true); err != nil {
			return nil, err
		}
	}
	p.forget(server)
	return p.Status(ctx, server)
}

// Unpin removes server's pins of tools (all of them, the server's own row included, when
// tools is nil) on an admin's word. A tool its configuration pins is pinned again, as
// listed, the next time it is listed. It reports how many pins went.
func (p *Pinner) Unpin(ctx context.Context, server string, tools []string, actor string) (int, error) {
	now := p.cfg.Now()
	names := tools
	if tools == nil {
		names = []string{""}
	}
	events := make([]store.PinEvent, 0, len(names))
	for _, name := range names {
		events = append(events, store.PinEvent{Server: server, Tool: name, Event: "unpinned", Actor: actor, At: now})
	}
	n, err := p.cfg.Store.DeleteToolPins(ctx, server, tools, events)
	p.forget(server)
	return n, err
}

// Status returns server's pins as stored: approved definitions and quarantined tools with
// what changed.
func (p *Pinner) Status(ctx context.Context, server string) ([]store.ToolPin, error) {
	pins, err := p.cfg.Store.ListToolPins(ctx, server)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stateLocked(server)
	st.pins = make(map[string]store.ToolPin, len(pins))
	for _, pin := range pins {
		st.pins[pin.Tool] = pin
	}
	st.loaded = p.cfg.Now()
	return pins, nil
}

// forget makes server's pins be read from the store when next needed.
func (p *Pinner) forget(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.servers[server]; st != nil {
		st.loaded = time.Time{}
	}
}

// Configured reports what server's configuration pins: every tool, or the tools named.
func (p *Pinner) Configured(server string) (all bool, tools []string) {
	r := (*p.rules.Load())[server]
	return r.All, slices.Clone(r.Tools)
}

// Events returns server's latest pin events (the audit trail), newest first, at most limit.
func (p *Pinner) Events(ctx context.Context, server string, limit int) ([]store.PinEvent, error) {
	return p.cfg.Store.ListPinEvents(ctx, server, limit)
}
