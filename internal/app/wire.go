package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/llm"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/metrics"
	"github.com/mcpgw/mcpgw/internal/notify"
	"github.com/mcpgw/mcpgw/internal/oauthvault"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/redisconn"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/store"
	"github.com/mcpgw/mcpgw/internal/tracing"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstreamid"
)

// shared is what every generation of the graph shares, built once by New.
type shared struct {
	env  Env
	log  *slog.Logger
	info mcp.Implementation
	// sealer seals session ids and cursors; continuations is the same
	// sealer, or nil without a real, shared salt key.
	sealer, continuations *seal.Sealer
	// budget bounds the upstream answer bytes buffered at once, shared by
	// every server, so many large answers cannot add up past it.
	budget      *upstream.ByteBudget
	hub         notify.Hub
	tombstones  front.Tombstones // ended legacy sessions, remembered across generations
	relay       front.Relay      // routes legacy callers' answers between replicas; nil without Redis
	closeShared func()           // ends the shared state's Redis subscriptions
	rpms        *rpms            // each server's current rpm, read by its client's middleware
	// gate admits calls against every limit (servers', keys' and teams'),
	// across generations: in Redis when configured, else in this process.
	gate       *sharedGate
	httpClient *http.Client // for upstream clients; nil means each builds its own
	health     *front.Health
	store      *store.Store // the key store; nil without a data dir
	// redis is the Redis client shared state goes through; nil when none is configured.
	redis *redisconn.Conn
	// servers is the /v1/mcp/server registry (the App's); serverHealth, when set, is the
	// prober's last word on a server.
	servers      front.ServerRegistry
	serverHealth func(serverID string) front.ServerHealth
	// listens are the subscriptions/listen and legacy follows running on
	// any generation's gateway: each moves to the next generation on Apply
	// when its servers kept their connection, else ends (see Apply).
	listens *gateway.Listens
	// observer receives every request and upstream call record; nil when
	// nothing observes.
	observer *observe.Observer
	// legacy is the legacy sessions' live state every generation's front
	// serves: a session whose servers kept their connection goes on across
	// Apply (front.MCP.HandOver).
	legacy *front.Legacy
	// prober checks every server's health in the background; it follows
	// each generation's clients (see Apply).
	prober *prober
	// previewEnv resolves os.environ/NAME in posted server configs (previews).
	previewEnv func(string) (string, bool)
	// metrics are served at /metrics; nil when off.
	metrics *metrics.Metrics
	// cacheStats counts every generation's list cache hits and misses.
	cacheStats catalog.CacheStats
	// tracer exports trace spans (one of observer's sinks); nil when tracing is off.
	tracer *tracing.Tracer
	// spend is the spend and audit log; nil without a store.
	spend *spendLog
	// ephemeral is the per-process identity signing key, used when none is
	// configured.
	ephemeral ephemeralKey
	// ui is the admin UI's sessions and activity sink; nil when the UI is off.
	ui *uiState
	// pins is tool-definition pinning and the guardrails' shared parts; nil leaves both off.
	pins *pinState
	// fanout runs every generation's fan-outs and list walks on goroutines kept
	// between listings (catalog.Workers); closed by App.Close.
	fanout *catalog.Workers
}

// wire builds one generation of the graph for cfg, in dependency order:
// the caller authenticator, the upstream clients (a server named in keep
// reuses that client; every other server gets a new one, publishing its
// notifications to the hub), the sampler, policy, catalog and gateway (which
// then subscribe to the hub), and the HTTP front over them. On error the
// clients it created are closed; those in keep are left as they are.
func (s *shared) wire(cfg *config.Config, keep map[string]*upstream.Client) (*generation, error) {
	reg := newRegistry(cfg.Servers, cfg.LiteLLM.MCPAliases)
	md := resourceMetadata(cfg, reg)
	authn, err := identity.New(identity.Config{
		MasterKey:     cfg.General.MasterKey.Reveal(),
		CustomAuthURL: cfg.General.CustomAuth,
		PermitWeak:    s.env.PermitWeak,
		Logger:        s.log,
		Keys:          keyLookup(s.store),
		OnWebhook:     s.onWebhook(),
		JWT:           jwtConfig(cfg, s.store, md),
	})
	if err != nil {
		return nil, err
	}
	if w := cfg.General.HTTP.WriteTimeout; s.env.ClientTimeout >= w {
		s.log.Warn("LITELLM_MCP_CLIENT_TIMEOUT is not shorter than general_settings.http_write_timeout; slow answers will be cut",
			"client_timeout", s.env.ClientTimeout.String(), "http_write_timeout", w.String())
	}
	first := s.listens == nil
	if first { // New, before any request
		s.listens = gateway.NewListens()
		s.legacy = front.NewLegacy(s.sealer, front.SessionConfig{Tombstones: s.tombstones, Relay: s.relay}, s.log)
	}
	g := &generation{reg: reg, clients: make(map[string]*upstream.Client, len(reg.servers))}
	created, err := s.openClients(g, reg, keep)
	if err != nil {
		return nil, err
	}
	gw, signer, vault, err := s.buildGateway(cfg, reg, g, first)
	if err != nil {
		closeClients(context.Background(), s.log, created)
		return nil, err
	}
	s.registerRoutes(g, cfg, reg, md, authn, gw, signer, vault)
	return g, nil
}

// openClients fills g.clients: keep's client for a server it holds, a new one for the others
// (returned, for closing should the generation not be built).
func (s *shared) openClients(g *generation, reg *registry, keep map[string]*upstream.Client) ([]*upstream.Client, error) {
	var created []*upstream.Client
	for _, sv := range reg.servers {
		if c := keep[sv.Name]; c != nil {
			g.clients[sv.Name] = c
			continue
		}
		uc := s.clientConfig(sv)
		err := s.withSpec(&uc, sv)
		var c *upstream.Client
		if err == nil {
			c, err = upstream.New(uc)
		}
		if err != nil {
			closeClients(context.Background(), s.log, created)
			return nil, err
		}
		created = append(created, c)
		g.clients[sv.Name] = c
	}
	return created, nil
}

// buildGateway builds the generation's catalog (g.cat) and gateway over g.clients and
// subscribes it to the hub's list changes; first makes it the gateway that delivers followed
// notifications.
func (s *shared) buildGateway(cfg *config.Config, reg *registry, g *generation, first bool) (*gateway.Gateway, *upstreamid.Signer, *oauthvault.Vault, error) {
	sampler, err := newSampler(cfg, s.log)
	if err != nil {
		return nil, nil, nil, err
	}
	signer, err := s.identitySigner(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	gwServers := reg.gatewayServers(g.clients)
	s.withIdentity(gwServers, signer, cfg)
	pol := policy.New(reg.policyServers(), policy.Options{Separator: s.env.Separator,
		RequireKeyAccessDefined:     cfg.General.RequireKeyMCPAccessDefined,
		RequireEndUserAccessDefined: cfg.General.RequireEndUserMCPAccessDefined,
		AllowAllKeysRespectsScope:   cfg.General.MCPAllowAllKeysRespectsScope})
	var guard gateway.CallGuard
	if s.pins != nil {
		guard = s.pins.configure(cfg, s.log)
	}
	rules, err := compileRules(cfg, reg)
	if err != nil {
		return nil, nil, nil, err
	}
	cat := catalog.New(catalog.Config{Servers: reg.catalogServers(g.clients), Separator: s.env.Separator, Sealer: s.sealer, Logger: s.log,
		Lists: catalog.NewMemoryListCache(), Snapshots: catalog.NewMemorySnapshots(), CacheStats: &s.cacheStats, Vetter: s.pins.vetter(), Workers: s.fanout})
	g.cat = cat
	vault := s.newVault(reg.servers)
	var tokens gateway.CallerTokens
	if vault != nil {
		tokens = callerTokens{vault}
	}
	gw := gateway.New(gateway.Config{
		Servers: gwServers, Policy: pol, Rules: rules, Catalog: cat, Info: s.info,
		Advertised: cfg.General.MCPAdvertisedVersions, ListTimeout: s.env.ListingTimeout, Logger: s.log,
		Continuations: s.continuations, Sampler: sampler, Limit: rpmDiscovery(s.gate, s.rpms, s.log),
		AdmitCall: budgetAdmit(s.store, s.spend.owed,
			(&callerLimits{gate: s.gate, rpms: s.rpms, resolve: reg.resolve, log: s.log, now: time.Now}).admit),
		MaxListenersPerCaller: cfg.General.MaxListenersPerCaller, Listens: s.listens,
		CallerTokens: tokens, Guard: guard,
	})
	g.gw = gw
	if first {
		gw.TakeOver() // the gateway that delivers followed notifications
	}
	g.unsubscribe = s.hub.Subscribe(func(e notify.Event) {
		cat.ListChanged(e.Server, e.Method)
		gw.Notify(e.Server, e.Session, e.Method, e.Params)
	})
	return gw, signer, vault, nil
}

// registerRoutes builds the generation's front and mux with every route it serves.
func (s *shared) registerRoutes(g *generation, cfg *config.Config, reg *registry, md *front.ResourceMetadata, authn *identity.Authenticator, gw *gateway.Gateway, signer *upstreamid.Signer, vault *oauthvault.Vault) {
	publicURL := front.NewPublicURL(cfg.General.Public.BaseURL, cfg.General.Public.TrustedProxies)
	g.front = front.NewMCP(front.MCPConfig{
		Gateway: gw, Auth: authn, Sealer: s.sealer, Advertised: cfg.General.MCPAdvertisedVersions,
		Info: s.info, ScopedPrefix: cfg.General.MCPScopedPrefix, Logger: s.log,
		Resolve:      reg.resolve, // one lookup for every route: name, then id, then alias
		Expand:       reg.expand,
		MaxBodyBytes: cfg.General.HTTP.MaxRequestBodyBytes,
		Legacy:       s.legacy,
		Detach:       detach,
		Observer:     s.observer,
		Hold:         hold,
		Metadata:     md,
		PublicBase:   publicURL.Base,
	})
	g.mux = http.NewServeMux()
	g.front.Register(g.mux)
	if md != nil {
		md.Register(g.mux)
	}
	g.front.RegisterREST(g.mux)
	keys := front.NewKeys(front.KeysConfig{Auth: authn, Store: s.store, Logger: s.log})
	keys.Register(g.mux)
	keys.RegisterDirectory(g.mux)
	keys.RegisterSpend(g.mux)
	front.NewMCPServers(s.serverRoutes(authn, gw, g.front)).Register(g.mux)
	clientOAuth := s.newClientOAuth(reg.servers)
	registerOAuthFlow(g.mux, vault, clientOAuth, authn, reg.resolve, publicURL.Base,
		func(c *identity.Caller) []string { return gw.Visible(gateway.Operation{Caller: c}) })
	registerClientRunMetadata(g.mux, md, clientOAuth, publicURL, reg.resolve)
	if s.pins != nil {
		front.NewPinRoutes(s.serverRoutes(authn, gw, g.front), s.pins.pinner).Register(g.mux)
	}
	(&front.PolicyExplain{Auth: authn, Gateway: gw}).Register(g.mux)
	s.health.Register(g.mux)
	s.registerHealthRoutes(g, cfg, authn)
	jwks := &front.JWKS{}
	if signer != nil {
		jwks.Set = signer.JWKS()
	}
	jwks.Register(g.mux)
	s.ui.register(g.mux, authn, g.mux, uiClaims(cfg, s.store), publicURL.Base)
	if s.metrics != nil {
		(&front.Metrics{Auth: authn, Public: cfg.LiteLLM.Metrics.Public, Handler: s.metrics.Handler()}).Register(g.mux)
	}
}

// clientConfig is sv's upstream client configuration with the shared
// resources, the hook that publishes its notifications to the hub and the
// middleware that enforces the server's current max_concurrent_requests and
// rpm (see rpms).
func (s *shared) clientConfig(sv config.Server) upstream.Config {
	uc := upstreamConfig(sv, s.env, s.info)
	uc.Logger, uc.AnswerBudget, uc.HTTPClient = s.log, s.budget, s.httpClient
	name, hub := sv.Name, s.hub
	uc.OnNotification = func(session, method string, params json.RawMessage) {
		hub.Publish(notify.Event{Server: name, Session: session, Method: method, Params: params})
	}
	uc.Middleware = append(uc.Middleware, serverLimits(s.gate, sv.Name, s.rpms.of(sv.Name), s.rpms.maxOf(sv.Name), s.log))
	if s.observer.Enabled() {
		uc.Middleware = append(uc.Middleware, observeCalls(s.observer, sv.Name))
	}
	if s.tracer != nil {
		uc.Middleware = append(uc.Middleware, propagateCalls(s.tracer, sv))
	}
	return uc
}

// newSampler builds the sampling client from model_list; nil when no model
// is configured.
func newSampler(cfg *config.Config, log *slog.Logger) (gateway.Sampler, error) {
	if len(cfg.Models) == 0 {
		return nil, nil
	}
	models := make([]llm.Model, 0, len(cfg.Models))
	for _, m := range cfg.Models {
		models = append(models, llm.Model{Name: m.ModelName, Provider: m.Params.Model, APIBase: m.Params.APIBase, APIKey: m.Params.APIKey.Reveal()})
	}
	s, err := llm.New(llm.Config{Models: models, Default: cfg.LiteLLM.DefaultMCPSamplingModel, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("model_list: %w", err)
	}
	return s, nil
}

// newSealer builds the token sealer. Without LITELLM_SALT_KEY, session ids and
// cursors are sealed with a key made for this process only (a single replica
// works; sessions do not survive a restart), and continuations are refused.
func newSealer(saltKey string, log *slog.Logger) (*seal.Sealer, error) {
	if strings.TrimSpace(saltKey) == "" {
		raw := make([]byte, 32)
		_, _ = rand.Read(raw)
		saltKey = hex.EncodeToString(raw)
		log.Warn("LITELLM_SALT_KEY is not set: session ids and cursors are sealed with a per-process key, so they do not survive a restart or move between replicas")
	}
	return seal.New(saltKey, front.SessionPurpose, catalog.SealPurpose, gateway.ContinuationPurpose)
}

// closeClients closes every client in parallel within ctx.
func closeClients(ctx context.Context, log *slog.Logger, clients []*upstream.Client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		panics.Go(log, "closing an upstream", func() {
			defer wg.Done()
			_ = c.Close(ctx)
		}, nil)
	}
	wg.Wait()
}
