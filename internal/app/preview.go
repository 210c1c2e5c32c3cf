package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/identity"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// previewCloseTimeout bounds ending a preview's throwaway client.
const previewCloseTimeout = 5 * time.Second

// registerHealthRoutes adds GET /v1/mcp/server/health and the server
// previews (POST /mcp-rest/test/connection, /mcp-rest/test/tools/list) to
// g's mux.
func (s *shared) registerHealthRoutes(g *generation, cfg *config.Config, authn *identity.Authenticator) {
	reg, gw := g.reg, g.gw
	front.NewServerHealthAPI(front.ServerHealthConfig{
		Auth:    authn,
		Visible: func(c *identity.Caller) []string { return gw.Visible(gateway.Operation{Caller: c}) },
		All: func() []string {
			out := make([]string, 0, len(reg.servers))
			for _, sv := range reg.servers {
				out = append(out, sv.Name)
			}
			return out
		},
		Resolve:  reg.resolve,
		ServerID: func(name string) string { return serverID(reg, name) },
		Check:    s.prober.checkNow,
		Logger:   s.log,
	}).Register(g.mux)
	hs := cfg.General.Health
	front.NewPreview(front.PreviewConfig{
		Auth: authn,
		Run: func(ctx context.Context, op front.PreviewOp, body []byte) front.PreviewResult {
			return s.preview(ctx, hs, op, body)
		},
		Logger: s.log,
	}).Register(g.mux)
}

// serverID is the server_id of the server named name (its name when none is set).
func serverID(reg *registry, name string) string {
	if sv, ok := reg.server(name); ok && sv.ServerID != "" {
		return sv.ServerID
	}
	return name
}

// preview tries a posted server config on a throwaway upstream client: it
// validates the config by the YAML rules, refuses a stdio command unless
// mcp_preview_allow_stdio and an address outboundGuard refuses, then
// connects (or lists tools) within the listing timeout and closes the
// client. Nothing is saved or registered. Messages are scrubbed of every
// credential the config holds.
func (s *shared) preview(ctx context.Context, hs config.HealthSettings, op front.PreviewOp, body []byte) front.PreviewResult {
	sv, problems, err := config.ParseServerRequest(body, "preview", config.Options{LookupEnv: s.previewEnv, ToolPrefixSeparator: s.env.Separator, DenyEnv: deniedToAPI})
	if err != nil {
		return front.PreviewResult{Refused: http.StatusBadRequest, Message: problemText(problems, err)}
	}
	scrub := scrubber(sv)
	if sv.Transport == config.TransportStdio && !hs.PreviewAllowStdio {
		return front.PreviewResult{Refused: http.StatusForbidden, Param: "transport",
			Message: "stdio previews run the posted command on the gateway host; they are off unless general_settings.mcp_preview_allow_stdio is true"}
	}
	guard := outboundGuard{allowPrivate: hs.PreviewAllowPrivateNetworks}
	for _, u := range []struct{ param, url string }{{"url", sv.URL}, {"token_url", sv.TokenURL}} {
		if u.url == "" || sv.Transport == config.TransportStdio && u.param == "url" {
			continue
		}
		if why := guard.check(ctx, u.url); why != "" {
			return front.PreviewResult{Refused: http.StatusForbidden, Param: u.param, Message: scrub(why)}
		}
	}
	uc := upstreamConfig(sv, s.env, s.info)
	hc := guard.client()
	defer hc.CloseIdleConnections()
	uc.Logger, uc.AnswerBudget, uc.HTTPClient = s.log, s.budget, hc
	c, err := upstream.New(uc)
	if err != nil {
		return front.PreviewResult{Refused: http.StatusBadRequest, Message: scrub(err.Error())}
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), previewCloseTimeout)
		defer cancel()
		_ = c.Close(cctx)
	}()
	ctx, cancel := context.WithTimeout(ctx, s.env.ListingTimeout)
	defer cancel()
	var res front.PreviewResult
	opts := upstream.Options{Ephemeral: true}
	if op == front.PreviewTools {
		res.Tools, err = c.ListTools(ctx, opts)
	} else {
		_, err = c.Info(ctx, opts)
	}
	if err != nil {
		cl := upstream.Classify(err)
		return front.PreviewResult{Fault: string(cl.Fault), Message: scrub(cl.Message)}
	}
	return res
}

// problemText is a refused config's errors, one after the other, without
// line numbers (a posted body has none worth naming).
func problemText(problems []config.Problem, err error) string {
	var msgs []string
	for _, p := range problems {
		if p.Severity == config.SeverityError {
			msgs = append(msgs, p.Msg)
		}
	}
	if len(msgs) == 0 {
		var ve *config.ValidationError
		if errors.As(err, &ve) {
			return "invalid server config"
		}
		return err.Error()
	}
	return "invalid server config: " + strings.Join(msgs, "; ")
}

// scrubber returns a function that replaces every credential value of sv
// (auth_value, client_secret, static header values, env values) in a
// message with "[redacted]".
func scrubber(sv config.Server) func(string) string {
	var secrets []string
	add := func(v string) {
		if len(strings.TrimSpace(v)) >= 4 {
			secrets = append(secrets, v)
		}
	}
	add(sv.AuthValue.Reveal())
	add(sv.ClientSecret.Reveal())
	for _, v := range sv.StaticHeaders {
		add(v)
	}
	for _, v := range sv.Env {
		add(v)
	}
	return func(msg string) string {
		for _, v := range secrets {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
		return msg
	}
}
