package pinning

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/store"
)

// Defaults of Config.
const (
	// DefaultRefresh is how long a server's pins read from the store are used before they are
	// read again (when a listing or a call needs them).
	DefaultRefresh = 2 * time.Second
	// maxJudged bounds the remembered guardrail verdicts on descriptions; when full they
	// start over.
	maxJudged = 10000
	// maxJudging bounds the descriptions of one listing judged at once.
	maxJudging = 8
	// maxServers bounds the servers whose pins are held; when full they start over (and are
	// read from the store again).
	maxServers = 10000
)

// Quarantine reasons.
const (
	ReasonChanged   = "changed"
	ReasonGuardrail = "guardrail"
)

// Store keeps pins; *store.Store is one, MemoryStore another.
type Store interface {
	ListToolPins(ctx context.Context, server string) ([]store.ToolPin, error)
	PutToolPins(ctx context.Context, pins []store.ToolPin, events []store.PinEvent, overwrite bool) error
	DeleteToolPins(ctx context.Context, server string, tools []string, events []store.PinEvent) (int, error)
	ListPinEvents(ctx context.Context, server string, limit int) ([]store.PinEvent, error)
}

// Verdict is a guardrail's word on a tool's description.
type Verdict struct {
	Blocked bool
	Reason  string // the guardrail's blocked_reason; logged only as its length
}

// Judge asks the listing guardrails about a tool's description. An error means no verdict
// (the guardrail failed closed): the tool is hidden from that listing and judged again on
// the next.
type Judge func(ctx context.Context, server, tool, description string) (Verdict, error)

// Rule is what a server's configuration pins: All (pin_tool_definitions) or the named Tools
// (pinned_tools).
type Rule struct {
	All   bool
	Tools []string
}

// Config builds a Pinner.
type Config struct {
	Store   Store // nil: a MemoryStore
	Logger  *slog.Logger
	Refresh time.Duration // zero: DefaultRefresh
	// OnQuarantine is told of every quarantine (a metric); nil: nothing.
	OnQuarantine func(server, reason string)
	Now          func() time.Time
}

// Pinner records tool definitions, quarantines changed ones and answers whether a tool is
// hidden.
type Pinner struct {
	cfg   Config
	rules atomic.Pointer[map[string]Rule]
	judge atomic.Pointer[Judge]

	mu      sync.Mutex
	servers map[string]*state
	judged  map[string]Verdict // server\x00tool\x00digest → verdict
}

// state is what the pinner holds of one server.
type state struct {
	pins   map[string]store.ToolPin // by tool; "" is the server's own row
	loaded time.Time                // zero: never read (or must be read again)
	seen   map[string]Definition    // the last listing's definitions
	// defined is the last listing's definitions: an item listed again byte
	// for byte is not digested again.
	defined   *listing
	unchecked map[string]bool // descriptions no guardrail could judge
}

// listing is one listing's definitions, by each item's JSON as listed and
// by name (what seen is set to); neither is changed once made.
type listing struct {
	// items are the items as listed, in order: the upstream's bytes, which
	// nothing changes once decoded (the same listing again, handed on by
	// the upstream client's page memo, is the very same slices, told by
	// their address).
	items  []json.RawMessage
	defs   []Definition
	byItem map[string]Definition
	byName map[string]Definition
}

// New returns a Pinner.
func New(cfg Config) *Pinner {
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Pinner{cfg: cfg, servers: map[string]*state{}, judged: map[string]Verdict{}}
	p.rules.Store(&map[string]Rule{})
	return p
}

// Configure sets the servers' rules and the listing guardrails (nil: none), for the
// configuration being applied.
func (p *Pinner) Configure(rules map[string]Rule, judge Judge) {
	if rules == nil {
		rules = map[string]Rule{}
	}
	p.rules.Store(&rules)
	if judge == nil {
		p.judge.Store(nil)
	} else {
		p.judge.Store(&judge)
	}
}

// Hidden reports whether server's tool is kept from callers, and why ("changed",
// "guardrail", or "unchecked" while no guardrail could judge its description). It reads
// what this replica holds (see Check for the call path).
func (p *Pinner) Hidden(server, tool string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.servers[server]
	if st == nil {
		return "", false
	}
	if pin, ok := st.pins[tool]; ok && pin.Quarantine != "" {
		return pin.Quarantine, true
	}
	if st.unchecked[tool] {
		return "unchecked", true
	}
	return "", false
}

// Check is Hidden after reading server's pins again when they are older than the refresh
// interval, so a quarantine or an approval on another replica holds here within it.
func (p *Pinner) Check(ctx context.Context, server, tool string) (string, bool) {
	p.load(ctx, server)
	return p.Hidden(server, tool)
}

// load returns server's state, read from the store when it is stale; a failed read keeps
// what was held (logged).
func (p *Pinner) load(ctx context.Context, server string) *state {
	p.mu.Lock()
	st := p.servers[server]
	fresh := st != nil && !st.loaded.IsZero() && p.cfg.Now().Sub(st.loaded) < p.cfg.Refresh
	p.mu.Unlock()
	if fresh {
		return st
	}
	pins, err := p.cfg.Store.ListToolPins(ctx, server)
	p.mu.Lock()
	defer p.mu.Unlock()
	st = p.stateLocked(server)
	if err != nil {
		p.cfg.Logger.Warn("tool pins not read; the last ones read are used", "server", server, "error", err.Error())
		return st
	}
	st.pins = make(map[string]store.ToolPin, len(pins))
	for _, pin := range pins {
		st.pins[pin.Tool] = pin
	}
	st.loaded = p.cfg.Now()
	return st
}

func (p *Pinner) stateLocked(server string) *state {
	st := p.servers[server]
	if st == nil {
		if len(p.servers) >= maxServers {
			p.servers = map[string]*state{}
		}
		st = &state{pins: map[string]store.ToolPin{}, seen: map[string]Definition{}, unchecked: map[string]bool{}}
		p.servers[server] = st
	}
	return st
}

// pinned reports whether server's tool is pinned: by its configuration, by its server row
// or its own row in the store.
func (p *Pinner) pinned(st *state, server, tool string) bool {
	r := (*p.rules.Load())[server]
	if r.All || slices.Contains(r.Tools, tool) {
		return true
	}
	_, all := st.pins[""]
	_, own := st.pins[tool]
	return all || own
}

// Vet judges a tools/list of server fresh from the upstream, before it is served or cached:
// a pinned tool seen for the first time is pinned; a pinned tool whose definition differs
// from the approved one is quarantined (WARN naming the parts that changed, OnQuarantine, an
// audit row); one back at its approved definition is served again; a description the listing
// guardrails block quarantines its tool. Unchanged tools cost a digest and a map lookup.
func (p *Pinner) Vet(ctx context.Context, server string, items []json.RawMessage) {
	st := p.load(ctx, server)
	defs, byName := p.define(st, items)
	verdicts, failed := p.judgeAll(ctx, server, st, defs)
	var first, over []store.ToolPin
	var events []store.PinEvent
	now := p.cfg.Now()
	p.mu.Lock()
	st.seen = byName
	for _, d := range defs {
		if failed[d.Name] {
			st.unchecked[d.Name] = true
			continue
		}
		delete(st.unchecked, d.Name)
		pin, has := st.pins[d.Name]
		var write *store.ToolPin
		var event string
		switch {
		case has && pin.Digest == d.Digest:
			if pin.Quarantine != "" {
				pin.Quarantine, pin.PendingDigest, pin.PendingParts, pin.Changed = "", "", nil, nil
				write, event = &pin, "restored"
			}
		case verdicts[d.Name].Blocked:
			if !(pin.Quarantine == ReasonGuardrail && pin.PendingDigest == d.Digest) {
				pin = store.ToolPin{Server: server, Tool: d.Name, Digest: pin.Digest, Parts: pin.Parts,
					PendingDigest: d.Digest, PendingParts: d.Parts, Quarantine: ReasonGuardrail, Changed: Changed(pin.Parts, d.Parts)}
				write, event = &pin, "quarantined"
			}
		case !p.pinned(st, server, d.Name):
			if has && pin.Quarantine != "" { // was blocked, passes now
				pin.Quarantine, pin.PendingDigest, pin.PendingParts, pin.Changed = "", "", nil, nil
				write, event = &pin, "restored"
			}
		case !has || pin.Digest == "":
			pin = store.ToolPin{Server: server, Tool: d.Name, Digest: d.Digest, Parts: d.Parts}
			pin.UpdatedAt = now
			st.pins[d.Name] = pin
			first = append(first, pin)
			events = append(events, store.PinEvent{Server: server, Tool: d.Name, Event: "pinned", At: now})
			continue
		case !(pin.Quarantine == ReasonChanged && pin.PendingDigest == d.Digest):
			pin.PendingDigest, pin.PendingParts, pin.Quarantine = d.Digest, d.Parts, ReasonChanged
			pin.Changed = Changed(pin.Parts, d.Parts)
			write, event = &pin, "quarantined"
		}
		if write == nil {
			continue
		}
		write.UpdatedAt, write.UpdatedBy = now, ""
		st.pins[d.Name] = *write
		over = append(over, *write)
		events = append(events, store.PinEvent{Server: server, Tool: d.Name, Event: event, Changed: write.Changed, At: now})
		if event == "quarantined" {
			p.cfg.Logger.Warn("tool quarantined: its definition differs from the approved one; an admin must approve it",
				"server", server, "tool", d.Name, "reason", write.Quarantine, "changed", write.Changed)
			if p.cfg.OnQuarantine != nil {
				p.cfg.OnQuarantine(server, write.Quarantine)
			}
		}
	}
	p.mu.Unlock()
	p.write(ctx, server, first, over, events)
}

// write stores what Vet decided: first sightings without replacing rows already there,
// quarantines and restorations over them. After a first sighting the server's pins are read
// again, so a row another replica wrote first wins.
func (p *Pinner) write(ctx context.Context, server string, first, over []store.ToolPin, events []store.PinEvent) {
	if len(first) == 0 && len(over) == 0 {
		return
	}
	var firstEvents, overEvents []store.PinEvent
	for _, e := range events {
		if e.Event == "pinned" {
			firstEvents = append(firstEvents, e)
		} else {
			overEvents = append(overEvents, e)
		}
	}
	if len(over) > 0 {
		if err := p.cfg.Store.PutToolPins(ctx, over, overEvents, true); err != nil {
			p.cfg.Logger.Error("tool pins not stored; this replica holds them until it restarts", "server", server, "error", err.Error())
		}
	}
	if len(first) > 0 {
		if err := p.cfg.Store.PutToolPins(ctx, first, firstEvents, false); err != nil {
			p.cfg.Logger.Error("tool pins not stored; this replica holds them until it restarts", "server", server, "error", err.Error())
			return
		}
		p.mu.Lock()
		p.stateLocked(server).loaded = time.Time{}
		p.mu.Unlock()
	}
}

// define returns the definitions of items (those that are tools), and the same
// by name (the last of a name wins), reusing the definition of an item listed
// byte for byte in server's last listing: Define is a function of the item's
// bytes, and re-digesting every tool of every listing was most of a listing's
// cost. The same listing again, in the same order (the common case), is told by
// comparing bytes and gets the last one's definitions and map by name as they
// are. What is kept is the last listing's, so it is bounded by one listing per
// server. Neither slice nor map is changed once made: callers only read them.
func (p *Pinner) define(st *state, items []json.RawMessage) ([]Definition, map[string]Definition) {
	p.mu.Lock()
	known := st.defined
	p.mu.Unlock()
	var byItem map[string]Definition
	if known != nil {
		if jsonrpc.EqualRaws(items, known.items) {
			return known.defs, known.byName
		}
		byItem = known.byItem
	}
	defs := make([]Definition, 0, len(items))
	from := make([]int, 0, len(items)) // defs[i] is items[from[i]]'s
	for i, it := range items {
		d, ok := byItem[string(it)]
		if !ok {
			var err error
			if d, err = Define(it); err != nil {
				continue
			}
		}
		defs = append(defs, d)
		from = append(from, i)
	}
	l := &listing{items: items, defs: defs,
		byItem: make(map[string]Definition, len(defs)), byName: make(map[string]Definition, len(defs))}
	for i, d := range defs {
		l.byItem[string(items[from[i]])] = d
		l.byName[d.Name] = d
	}
	p.mu.Lock()
	st.defined = l
	p.mu.Unlock()
	return defs, l.byName
}

// judgeAll asks the listing guardrails about every description whose definition is not
// the approved one and has no remembered verdict, at most maxJudging at once (a listing of
// many new tools costs about one guardrail round trip per maxJudging of them, not one per
// tool). failed names the tools no verdict was had for.
func (p *Pinner) judgeAll(ctx context.Context, server string, st *state, defs []Definition) (map[string]Verdict, map[string]bool) {
	jp := p.judge.Load()
	if jp == nil {
		return nil, nil
	}
	verdicts, failed := map[string]Verdict{}, map[string]bool{}
	var ask []Definition
	p.mu.Lock()
	for _, d := range defs {
		if pin, has := st.pins[d.Name]; has && pin.Digest == d.Digest {
			continue // approved as it is
		}
		if v, known := p.judged[server+"\x00"+d.Name+"\x00"+d.Digest]; known {
			verdicts[d.Name] = v
			continue
		}
		ask = append(ask, d)
	}
	p.mu.Unlock()
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxJudging)
	for _, d := range ask {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			mu.Lock()
			failed[d.Name] = true // what a panic leaves
			mu.Unlock()
			defer func() {
				if r := recover(); r != nil {
					p.cfg.Logger.Error("recovered from a panic while judging a tool description", panics.Attrs(r)...)
				}
			}()
			v, err := (*jp)(ctx, server, d.Name, d.Description)
			if err != nil {
				return
			}
			mu.Lock()
			delete(failed, d.Name)
			verdicts[d.Name] = v
			mu.Unlock()
			p.mu.Lock()
			if len(p.judged) >= maxJudged {
				p.judged = map[string]Verdict{}
			}
			p.judged[server+"\x00"+d.Name+"\x00"+d.Digest] = v
			p.mu.Unlock()
		}()
	}
	wg.Wait()
	return verdicts, failed
}
