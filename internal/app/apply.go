package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/reqscope"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// generation is one build of the graph over one config: every request runs
// on the generation current when it arrived.
type generation struct {
	reg         *registry
	clients     map[string]*upstream.Client // by server name
	gw          *gateway.Gateway
	cat         *catalog.Catalog // read by metrics (breaker states)
	front       *front.MCP
	mux         *http.ServeMux
	unsubscribe func() // ends the catalog's and gateway's hub subscription

	mu       sync.Mutex
	inflight int
	retired  bool          // a newer generation is current
	drained  bool          // retired and no request may enter any more
	idle     chan struct{} // closed when retired and inflight reaches 0
}

// enter counts a request in; false when the generation is drained.
func (g *generation) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.drained {
		return false
	}
	g.inflight++
	return true
}

// leave counts a request out.
func (g *generation) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.retired && g.inflight == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// serveCounted serves r on g, counted in g's requests in flight until it
// ends or detaches (a long-lived stream once open: a subscriptions/listen,
// a legacy GET or /mcp/sse stream may outlive g, see Apply).
func (g *generation) serveCounted(w http.ResponseWriter, r *http.Request) {
	s := &served{g: g}
	defer s.leave()
	g.mux.ServeHTTP(w, reqscope.Request(reqscope.With(r.Context(), reqscope.Served, s), r))
}

// served is the generation serving a request (kept in its context's
// scope, reqscope.Served) and whether the request left it.
type served struct {
	g    *generation
	left atomic.Bool
}

// leave stops counting the request among g's in flight, once.
func (s *served) leave() {
	if s.left.CompareAndSwap(false, true) {
		s.g.leave()
	}
}

// servedOf is the generation serving ctx's request, nil when none.
func servedOf(ctx context.Context) *served {
	s, _ := reqscope.Value(ctx, reqscope.Served).(*served)
	return s
}

// detach stops counting r among its generation's requests in flight
// (front.MCPConfig.Detach).
func detach(r *http.Request) {
	if s := servedOf(r.Context()); s != nil {
		s.leave()
	}
}

// hold counts one more request in flight on r's generation, until release:
// work r started that answers after r returns (front.MCPConfig.Hold). r is
// itself counted, so the generation is not idle yet.
func hold(r *http.Request) (release func()) {
	s := servedOf(r.Context())
	if s == nil {
		return func() {}
	}
	s.g.mu.Lock()
	s.g.inflight++
	s.g.mu.Unlock()
	var once sync.Once
	return func() { once.Do(s.g.leave) }
}

// retire waits, within ctx, for the requests running on g to end, then
// refuses new ones (they go to the current generation instead).
func (g *generation) retire(ctx context.Context) {
	g.mu.Lock()
	g.retired = true
	var idle chan struct{}
	if g.inflight > 0 {
		idle = make(chan struct{})
		g.idle = idle
	}
	g.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	g.mu.Lock()
	g.drained = true
	g.mu.Unlock()
}

// Apply makes cfg the running config. Servers whose connection identity did
// not change (see sameConnection) keep their upstream clients, and with
// them their sessions; new and changed servers get new clients. The new
// graph serves every request that arrives once Apply has swapped it in;
// requests already running finish on the old one. A subscriptions/listen
// whose servers all kept their clients (and whose caller sees the same
// servers) moves to the new gateway, its upstream listeners open, and is
// told a list change when what it sees changed (gateway.TakeOver); every
// other listen ends. Legacy sessions follow the same rule
// (front.MCP.HandOver): one whose servers all kept their clients keeps its
// GET or /mcp/sse stream and its follows, and its next requests run on the
// new graph; any other ends (404 on its next request, so its client
// initializes again). Once the old requests have finished, or ctx ends,
// the clients of removed and changed servers are closed. On error the
// running config stays as it was. The config run is cfg plus the
// servers kept in the store (store_model_in_db), read again; a nil cfg re-applies the config
// file's config last applied, for a change of the stored servers.
func (a *App) Apply(ctx context.Context, cfg *config.Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("apply: the gateway is closed")
	}
	file, cfg, err := a.withStoredServers(ctx, cfg)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	old := a.cur.Load()
	keep := make(map[string]*upstream.Client)
	for _, s := range cfg.Servers {
		if was, ok := old.reg.server(s.Name); ok && sameConnection(was, s, a.env, a.info) {
			keep[s.Name] = old.clients[s.Name]
		}
	}
	g, err := a.wire(cfg, keep)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	a.rpms.set(cfg.Servers)
	a.spend.setCosts(cfg.Servers)
	a.cur.Store(g)
	a.prober.set(cfg.Servers, g.clients)
	a.applied(file)
	if a.state.Load() == closing {
		g.front.Close()
	}
	kept, ended := g.gw.TakeOver()
	old.front.HandOver(g.front)
	old.retire(ctx)
	old.unsubscribe()
	var stale []*upstream.Client
	for name, c := range old.clients {
		if g.clients[name] != c {
			stale = append(stale, c)
		}
	}
	closeClients(ctx, a.log, stale)
	a.log.Info("config applied", "servers", len(cfg.Servers), "kept", len(keep), "closed", len(stale),
		"listens_kept", kept, "listens_ended", ended)
	return nil
}
