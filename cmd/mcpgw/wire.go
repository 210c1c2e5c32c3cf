package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/catalog"
	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/llm"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/panics"
	"github.com/mcpgw/mcpgw/internal/policy"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// app is the gateway built from one config: its HTTP routes and what must be
// stopped at shutdown.
type app struct {
	mcp     *front.MCP
	clients []*upstream.Client
	log     *slog.Logger
}

// envSettings are the environment variables the gateway reads.
type envSettings struct {
	saltKey        string
	clientTimeout  time.Duration
	listingTimeout time.Duration
	maxPages       int
	permitWeak     bool
}

func readEnv(lookupEnv func(string) (string, bool)) (envSettings, error) {
	e := envSettings{clientTimeout: 60 * time.Second, listingTimeout: 30 * time.Second, maxPages: 100}
	e.saltKey, _ = lookupEnv(seal.SaltKeyEnv)
	secs := func(name string, dst *time.Duration) error {
		v, ok := lookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			return nil
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f <= 0 {
			return fmt.Errorf("%s must be a positive number of seconds", name)
		}
		*dst = time.Duration(f * float64(time.Second))
		return nil
	}
	if err := secs("LITELLM_MCP_CLIENT_TIMEOUT", &e.clientTimeout); err != nil {
		return e, err
	}
	if err := secs("LITELLM_MCP_TOOL_LISTING_TIMEOUT", &e.listingTimeout); err != nil {
		return e, err
	}
	if v, ok := lookupEnv("MCP_TOOL_LISTING_MAX_PAGES"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return e, fmt.Errorf("MCP_TOOL_LISTING_MAX_PAGES must be a positive integer")
		}
		e.maxPages = n
	}
	v, _ := lookupEnv("LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY")
	e.permitWeak = strings.EqualFold(strings.TrimSpace(v), "true")
	return e, nil
}

// buildApp wires the gateway for cfg.
func buildApp(cfg *config.Config, lookupEnv func(string) (string, bool), log *slog.Logger) (*app, error) {
	env, err := readEnv(lookupEnv)
	if err != nil {
		return nil, err
	}
	sealer, err := newSealer(env.saltKey, log)
	if err != nil {
		return nil, err
	}
	var continuations *seal.Sealer // only with a real, shared salt key
	if strings.TrimSpace(env.saltKey) != "" {
		continuations = sealer
	}
	authn, err := identity.New(identity.Config{
		MasterKey:     cfg.General.MasterKey.Reveal(),
		CustomAuthURL: cfg.General.CustomAuth,
		PermitWeak:    env.permitWeak,
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	if w := cfg.General.HTTP.WriteTimeout; env.clientTimeout >= w {
		log.Warn("LITELLM_MCP_CLIENT_TIMEOUT is not shorter than general_settings.http_write_timeout; slow answers will be cut",
			"client_timeout", env.clientTimeout.String(), "http_write_timeout", w.String())
	}
	sep := configOptions(lookupEnv).ToolPrefixSeparator
	if sep == "" {
		sep = "-"
	}
	a := &app{log: log}
	info := mcp.Implementation{Name: "mcpgw", Version: buildVersion()}
	var (
		gwServers  []*gateway.Server
		catServers []*catalog.Server
		polServers []policy.Server
	)
	// Upstreams tell the catalog and the listens when their lists change;
	// both are built after them, so they are reached through these pointers.
	var catRef atomic.Pointer[catalog.Catalog]
	var gwRef atomic.Pointer[gateway.Gateway]
	// One budget for the upstream answer bytes buffered at once, shared by
	// every server, so many large answers cannot add up past it.
	budget := upstream.NewByteBudget(upstream.DefaultAnswerBudget)
	for _, s := range cfg.Servers {
		uc := upstreamConfig(s, cfg, env, info, log)
		uc.AnswerBudget = budget
		name := s.Name
		uc.OnNotification = func(session, method string, params json.RawMessage) {
			if cat := catRef.Load(); cat != nil {
				cat.ListChanged(name, method)
			}
			if gw := gwRef.Load(); gw != nil {
				gw.Notify(name, session, method, params)
			}
		}
		c, err := upstream.New(uc)
		if err != nil {
			a.close(context.Background())
			return nil, err
		}
		a.clients = append(a.clients, c)
		gwServers = append(gwServers, &gateway.Server{
			Name: s.Name, ID: s.ServerID, Alias: s.Alias, Client: c,
			ExtraHeaders: s.ExtraHeaders, Delegate: s.AuthType == config.AuthType(auth.AuthOAuthDelegate),
			AllowElicitation: s.AllowElicitation, AllowSampling: s.AllowSampling,
			TargetDigest: gateway.TargetDigest(s.ServerID, s.URL, string(s.Transport), s.ProtocolVersion, s.Command, s.Args),
		})
		catServers = append(catServers, &catalog.Server{Name: s.Name, Client: c,
			SkipParamHeaders: uc.Transport != "" && uc.Transport != upstream.TransportHTTP})
		polServers = append(polServers, policy.Server{
			Name: s.Name, ID: s.ServerID, Alias: s.Alias, AccessGroups: s.AccessGroups, AllowAllKeys: s.AllowAllKeys,
			AllowedTools: s.AllowedTools, DisallowedTools: s.DisallowedTools,
		})
	}
	sampler, err := newSampler(cfg, log)
	if err != nil {
		a.close(context.Background())
		return nil, err
	}
	pol := policy.New(polServers)
	cat := catalog.New(catalog.Config{Servers: catServers, Separator: sep, Sealer: sealer, Logger: log})
	catRef.Store(cat)
	gw := gateway.New(gateway.Config{
		Servers: gwServers, Policy: pol, Catalog: cat, Info: info,
		Advertised: cfg.General.MCPAdvertisedVersions, ListTimeout: env.listingTimeout, Logger: log,
		Continuations: continuations, Sampler: sampler,
	})
	gwRef.Store(gw)
	routes := config.Routes(cfg.Servers) // one lookup for every route: name, then id, then alias
	a.mcp = front.NewMCP(front.MCPConfig{
		Gateway: gw, Auth: authn, Sealer: sealer, Advertised: cfg.General.MCPAdvertisedVersions,
		Info: info, ScopedPrefix: cfg.General.MCPScopedPrefix, Logger: log,
		Resolve:      func(seg string) (string, bool) { n, ok := routes[seg]; return n, ok },
		MaxBodyBytes: cfg.General.HTTP.MaxRequestBodyBytes,
	})
	return a, nil
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

// upstreamConfig maps one mcp_servers entry to its client configuration.
func upstreamConfig(s config.Server, cfg *config.Config, env envSettings, info mcp.Implementation, log *slog.Logger) upstream.Config {
	uc := upstream.Config{
		Name: s.Name, Transport: string(s.Transport), URL: s.URL,
		Command: s.Command, Args: s.Args, Env: environ(s.Env),
		ProtocolVersion: s.ProtocolVersion,
		Auth: auth.PolicyConfig{
			AuthType: string(s.AuthType), AuthValue: s.AuthValue.Reveal(),
			HeaderName: s.AuthHeaderName, StaticHeaders: s.StaticHeaders,
		},
		// One legacy session per credential set: it advertises what the
		// server is allowed to ask, whichever caller opens it.
		Offer:          upstream.Offer{Elicitation: s.AllowElicitation, Sampling: s.AllowSampling, Roots: true},
		RequestTimeout: env.clientTimeout, ListTimeout: env.listingTimeout, MaxPages: env.maxPages,
		Logger: log, ClientInfo: info,
	}
	if s.Timeout > 0 {
		uc.RequestTimeout = s.Timeout
	}
	if s.AuthType == config.AuthType(auth.AuthOAuth2) && s.OAuth2Flow == config.OAuth2ClientCredentials {
		uc.OAuth2 = &auth.ClientCredentialsConfig{
			TokenURL: s.TokenURL, ClientID: s.ClientID, ClientSecret: s.ClientSecret.Reveal(), Scopes: s.Scopes,
		}
	}
	return uc
}

// environ renders a stdio server's own env as KEY=VALUE. The config's
// environment_variables are not passed on: they feed os.environ/ references
// (a server's env may name one), and often hold model API keys that no stdio
// child should see.
func environ(own map[string]string) []string {
	keys := make([]string, 0, len(own))
	for k := range own {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+own[k])
	}
	return out
}

// register adds the gateway's routes to mux.
func (a *app) register(mux *http.ServeMux) {
	a.mcp.Register(mux)
	a.mcp.RegisterREST(mux)
}

// handler returns the gateway's whole HTTP surface: every route (health too,
// when given) behind one admission layer: the DNS-rebinding guard, the
// in-flight bound and the body read deadline.
func (a *app) handler(cfg *config.Config, health *front.Health) http.Handler {
	mux := http.NewServeMux()
	a.register(mux)
	if health != nil {
		health.Register(mux)
	}
	return front.Admission(mux, front.AdmissionConfig{
		Guard:           front.NewHostGuard(cfg.General.AllowedHosts, cfg.General.AllowedOrigins),
		BodyReadTimeout: cfg.General.HTTP.ReadTimeout,
		MaxInflight:     cfg.General.HTTP.MaxInflightRequests,
	})
}

// newServer returns the HTTP server for h with lim's timeouts. Its
// ReadTimeout stays unset on purpose: net/http would let it fire while a
// finished body's connection is watched for the client leaving, cancelling
// every request that runs longer; the admission layer bounds body reads
// instead, and long-lived streams lift their deadlines.
func newServer(h http.Handler, lim config.HTTPLimits, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// goSafe runs f in a goroutine whose panic is logged at ERROR (its type
// only, never its value, which may hold arguments or tokens) instead of
// ending the process; onPanic, when set, runs after the log.
func goSafe(log *slog.Logger, what string, f func(), onPanic func()) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				log.Error("recovered from a panic", append([]any{"in", what}, panics.Attrs(v)...)...)
				if onPanic != nil {
					onPanic()
				}
			}
		}()
		f()
	}()
}

// close ends downstream streams, then every upstream session and child, in
// parallel, within ctx.
func (a *app) close(ctx context.Context) {
	if a.mcp != nil {
		a.mcp.Close()
	}
	var wg sync.WaitGroup
	for _, c := range a.clients {
		wg.Add(1)
		goSafe(a.log, "closing an upstream", func() {
			defer wg.Done()
			_ = c.Close(ctx)
		}, nil)
	}
	wg.Wait()
}
