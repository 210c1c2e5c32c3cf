package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ToolPin is one row of mcp_tool_pins (migrations/00007): the approved definition of one
// server's tool and, while it is quarantined, why and what it changed to. Tool "" is the
// server's own row, which pins all of its tools.
type ToolPin struct {
	Server, Tool string
	// Digest names the approved definition ("" when none was approved yet); Parts are the
	// digests of its parts (description, input_schema, output_schema, annotations, ...).
	Digest string
	Parts  map[string]string
	// PendingDigest and PendingParts name the definition last seen while quarantined.
	PendingDigest string
	PendingParts  map[string]string
	// Quarantine is "" (served), "changed" (the definition differs from Digest) or
	// "guardrail" (a guardrail blocked its description).
	Quarantine string
	// Changed names the parts that differ from the approved definition.
	Changed   []string
	UpdatedAt time.Time
	UpdatedBy string
}

// PinEvent is one row of mcp_tool_pin_events: the audit trail of pins.
type PinEvent struct {
	ID, Server, Tool string
	// Event is "pinned", "quarantined", "restored", "approved" or "unpinned".
	Event   string
	Changed []string
	Actor   string
	At      time.Time
}

const pinColumns = `server, tool, digest, parts, pending_digest, pending_parts, quarantine, changed, updated_at, updated_by`

// ListToolPins returns the pins of server (every server's when server is ""), by server and tool.
func (s *Store) ListToolPins(ctx context.Context, server string) ([]ToolPin, error) {
	if server == "" {
		return queryRows(ctx, s.db, "listing tool pins", scanPin, `SELECT `+pinColumns+` FROM mcp_tool_pins ORDER BY server, tool`)
	}
	return queryRows(ctx, s.reads(), "listing tool pins", scanPin,
		`SELECT `+pinColumns+` FROM mcp_tool_pins WHERE server = $1 ORDER BY tool`, server)
}

// PutToolPins writes pins and appends events in one transaction. overwrite replaces rows
// already there; otherwise a row already there is kept as it is (a first sighting never
// replaces what another replica recorded or an admin approved) and its event is dropped.
func (s *Store) PutToolPins(ctx context.Context, pins []ToolPin, events []PinEvent, overwrite bool) error {
	conflict := ` ON CONFLICT (server, tool) DO NOTHING`
	if overwrite {
		conflict = ` ON CONFLICT (server, tool) DO UPDATE SET digest = excluded.digest, parts = excluded.parts,
			pending_digest = excluded.pending_digest, pending_parts = excluded.pending_parts,
			quarantine = excluded.quarantine, changed = excluded.changed,
			updated_at = excluded.updated_at, updated_by = excluded.updated_by`
	}
	return s.inTx(ctx, func(tx *tx) error {
		for i, p := range pins {
			res, err := tx.ExecContext(ctx, `INSERT INTO mcp_tool_pins (`+pinColumns+`) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`+conflict,
				p.Server, p.Tool, p.Digest, jsonText(p.Parts, "{}"), p.PendingDigest, jsonText(p.PendingParts, "{}"),
				p.Quarantine, jsonText(p.Changed, "[]"), s.stamp(p.UpdatedAt), p.UpdatedBy)
			if err != nil {
				return fmt.Errorf("store: writing a tool pin: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 && !overwrite {
				events = dropEvent(events, pins[i])
			}
		}
		return s.insertPinEvents(ctx, tx, events)
	})
}

// dropEvent removes the event about p's server and tool.
func dropEvent(events []PinEvent, p ToolPin) []PinEvent {
	out := events[:0:0]
	for _, e := range events {
		if e.Server != p.Server || e.Tool != p.Tool {
			out = append(out, e)
		}
	}
	return out
}

// DeleteToolPins removes server's pins of tools (every pin of server, its own row included,
// when tools is nil) and appends events, in one transaction. It reports how many rows went.
func (s *Store) DeleteToolPins(ctx context.Context, server string, tools []string, events []PinEvent) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx *tx) error {
		if tools == nil {
			res, err := tx.ExecContext(ctx, `DELETE FROM mcp_tool_pins WHERE server = $1`, server)
			if err != nil {
				return fmt.Errorf("store: deleting tool pins: %w", err)
			}
			k, _ := res.RowsAffected()
			n = int(k)
		}
		for _, t := range tools {
			res, err := tx.ExecContext(ctx, `DELETE FROM mcp_tool_pins WHERE server = $1 AND tool = $2`, server, t)
			if err != nil {
				return fmt.Errorf("store: deleting a tool pin: %w", err)
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return s.insertPinEvents(ctx, tx, events)
	})
	return n, err
}

// ListPinEvents returns server's latest pin events (every server's when server is ""),
// newest first, at most limit.
func (s *Store) ListPinEvents(ctx context.Context, server string, limit int) ([]PinEvent, error) {
	const cols = `SELECT event_id, server, tool, event, changed, actor, created_at FROM mcp_tool_pin_events`
	if server == "" {
		return queryRows(ctx, s.db, "listing pin events", scanPinEvent, cols+` ORDER BY created_at DESC, event_id LIMIT $1`, limit)
	}
	return queryRows(ctx, s.db, "listing pin events", scanPinEvent,
		cols+` WHERE server = $1 ORDER BY created_at DESC, event_id LIMIT $2`, server, limit)
}

func (s *Store) insertPinEvents(ctx context.Context, tx *tx, events []PinEvent) error {
	for _, e := range events {
		id := e.ID
		if id == "" {
			id = NewID()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO mcp_tool_pin_events (event_id, server, tool, event, changed, actor, created_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7)`, id, e.Server, e.Tool, e.Event, jsonText(e.Changed, "[]"), e.Actor, s.stamp(e.At)); err != nil {
			return fmt.Errorf("store: recording a pin event: %w", err)
		}
	}
	return nil
}

// stamp is t in unix milliseconds, now when t is zero.
func (s *Store) stamp(t time.Time) int64 {
	if t.IsZero() {
		t = s.now()
	}
	return t.UnixMilli()
}

func scanPin(r scanner) (ToolPin, error) {
	var p ToolPin
	var parts, pending, changed string
	var at int64
	if err := r.Scan(&p.Server, &p.Tool, &p.Digest, &parts, &p.PendingDigest, &pending, &p.Quarantine, &changed, &at, &p.UpdatedBy); err != nil {
		return p, err
	}
	for _, f := range []struct {
		text string
		into any
	}{{parts, &p.Parts}, {pending, &p.PendingParts}, {changed, &p.Changed}} {
		if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
			return p, fmt.Errorf("decoding a tool pin: %w", err)
		}
	}
	p.UpdatedAt = time.UnixMilli(at).UTC()
	return p, nil
}

func scanPinEvent(r scanner) (PinEvent, error) {
	var e PinEvent
	var changed string
	var at int64
	if err := r.Scan(&e.ID, &e.Server, &e.Tool, &e.Event, &changed, &e.Actor, &at); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(changed), &e.Changed); err != nil {
		return e, fmt.Errorf("decoding a pin event: %w", err)
	}
	e.At = time.UnixMilli(at).UTC()
	return e, nil
}
