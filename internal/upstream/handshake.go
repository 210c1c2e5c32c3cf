package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// handshake starts the transport and runs what the era needs. On failure
// the transport it leaves in s.tr is closed by setup, once.
func (s *session) handshake(ctx context.Context) error {
	e := s.e
	if s.legacy {
		if err := s.open(ctx, verdictLegacy, false); err != nil {
			return err
		}
		err := s.initialize(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		// A child that refuses the legacy handshake may speak only the
		// modern era: a fresh child gets what the verdict says.
		e.log.Debug("legacy handshake refused; trying the upstream's era", "err", causeText(err))
		e.legacyRefused.Store(true)
		s.replaceTransport(nil)
	}
	v := e.era.get()
	if err := s.open(ctx, v, false); err != nil {
		return err
	}
	if v == verdictUnknown {
		var err error
		if v, err = s.probe(ctx); err != nil {
			return err
		}
		e.era.set(v)
		e.log.Info("upstream protocol era found", "era", v.era().String())
	}
	if v == verdictModern {
		return s.startModern(ctx)
	}
	err := s.initialize(ctx)
	// Only an HTTP answer carries the fallback signal (a status).
	if err != nil && v == verdictLegacy && e.era.auto && sseFallbackSignal(err) {
		s.replaceTransport(nil)
		if err = s.open(ctx, verdictSSE, false); err == nil {
			if err = s.initialize(ctx); err == nil {
				e.era.set(verdictSSE)
			}
		}
	}
	return err
}

// open starts the transport for verdict v (see dialer for again).
func (s *session) open(ctx context.Context, v verdict, again bool) error {
	t, err := s.e.dial.dial(ctx, v, peer{hdr: s.headers, notify: s.notify, owned: s.owned()}, again)
	if err != nil {
		return err
	}
	s.replaceTransport(t)
	return nil
}

// headers computes one request's headers: the credential (the caller's
// delegated token, a minted token, or the static auth_value), per-caller
// headers and static headers, by the server's policy.
func (s *session) headers(ctx context.Context) (http.Header, string, error) {
	return s.e.creds.headers(ctx, s.injected, s.token)
}

// probe sends server/discover and decides the era from the answer, following
// the spec's dual-era client rules.
func (s *session) probe(ctx context.Context) (verdict, error) {
	e := s.e
	// The probe is bounded by the listing budget; never by more than one
	// request's, so the request's own timeout cannot fire first and this
	// probe's budget is the one reported.
	budget := min(e.listTimeout, e.requestTimeout)
	// On a shared stream (stdio: the probe never runs on HTTP+SSE) no status
	// refuses an unknown method.
	quiet := s.transport().sharedStream()
	if quiet {
		// A legacy stdio server may ignore an unknown method; do not wait
		// long for it.
		budget = min(budget, 5*time.Second)
	}
	pctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	raw, err := s.rawRequest(pctx, mcp.MethodDiscover, nil, nil, true, nil)
	if re := rpcErr(err); re != nil && re.Code() == mcp.CodeUnsupportedProtocolVersion && offersModern(re.Err.Data) && ctx.Err() == nil {
		// The upstream names a modern revision it does support: the spec
		// says to retry with it rather than fall back.
		raw, err = s.rawRequest(pctx, mcp.MethodDiscover, nil, nil, true, nil)
	}
	if err == nil {
		var d mcp.DiscoverResult
		if jerr := json.Unmarshal(raw, &d); jerr != nil {
			return verdictLegacy, nil
		}
		if slices.Contains(d.SupportedVersions, mcp.Latest) {
			s.info = discoverInfo(d)
			return verdictModern, nil
		}
		return verdictLegacy, nil
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if re := rpcErr(err); re != nil {
		switch {
		case re.Code() == mcp.CodeUnsupportedProtocolVersion:
			return verdictLegacy, nil // it does not speak our modern revision
		case mcp.IsModernErrorCode(re.Code()),
			re.Code() == jsonrpc.CodeMethodNotFound && re.HTTPStatus == http.StatusNotFound:
			return verdictModern, nil
		}
		return verdictLegacy, nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.Status {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			return verdictLegacy, nil
		}
		return 0, err
	}
	if quiet {
		if s.transport().expired() {
			// The child could not stand the probe; a fresh one gets the
			// handshake.
			if serr := s.open(ctx, verdictLegacy, true); serr != nil {
				return 0, serr
			}
		}
		return verdictLegacy, nil // no answer in time, or a non-modern one
	}
	if pctx.Err() != nil {
		return 0, e.timedOut(mcp.MethodDiscover, budget)
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return verdictLegacy, nil
	}
	return 0, err
}

// offersModern reports whether a -32022 error's data lists a modern
// revision this client speaks.
func offersModern(data json.RawMessage) bool {
	var d mcp.UnsupportedVersionData
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	return slices.Contains(d.Supported, mcp.Latest)
}

func discoverInfo(d mcp.DiscoverResult) Info {
	info := Info{
		Era:               mcp.EraModern,
		Version:           mcp.Latest,
		SupportedVersions: d.SupportedVersions,
		Capabilities:      d.Capabilities,
		Instructions:      strings.TrimSpace(d.Instructions),
	}
	if raw, ok := d.Meta[mcp.MetaServerInfo]; ok {
		_ = json.Unmarshal(raw, &info.ServerInfo)
	}
	return info
}

// startModern prepares per-request _meta and learns the upstream's
// capabilities (server/discover) if the probe did not already.
func (s *session) startModern(ctx context.Context) error {
	e := s.e
	s.transport().negotiated(mcp.Latest)
	if s.info.Era == mcp.EraModern {
		return nil // the probe's discover already told us
	}
	s.info = Info{Era: mcp.EraModern, Version: mcp.Latest}
	budget := min(e.listTimeout, e.requestTimeout) // as for the probe
	dctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	raw, err := s.rawRequest(dctx, mcp.MethodDiscover, nil, nil, true, nil)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if dctx.Err() != nil {
			return e.timedOut(mcp.MethodDiscover, budget)
		}
		var se *StatusError
		if errors.As(err, &se) {
			return err // credentials refused: nothing else will work either
		}
		e.log.Debug("server/discover failed; capabilities unknown", "err", causeText(err))
		return nil
	}
	var d mcp.DiscoverResult
	if err := json.Unmarshal(raw, &d); err != nil {
		return protoErr("invalid MCP response to server/discover", err)
	}
	s.info = discoverInfo(d)
	return nil
}

// initialize runs the legacy handshake.
func (s *session) initialize(ctx context.Context) error {
	e := s.e
	offer := e.pinned
	if offer == VersionAuto {
		offer = mcp.LatestLegacy
	}
	params, err := json.Marshal(struct {
		ProtocolVersion string             `json:"protocolVersion"`
		Capabilities    json.RawMessage    `json:"capabilities"`
		ClientInfo      mcp.Implementation `json:"clientInfo"`
	}{offer, s.caps, e.clientInfo})
	if err != nil {
		return err
	}
	// rawRequest applies the request timeout; on any failure below, setup
	// closes the transport (and so ends a session the upstream opened), once.
	raw, err := s.rawRequest(ctx, mcp.MethodInitialize, params, nil, false, nil)
	if err != nil {
		return err
	}
	var res mcp.InitializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return protoErr("invalid MCP response to initialize", err)
	}
	switch {
	case e.pinned != VersionAuto && res.ProtocolVersion != offer:
		return protoErr(fmt.Sprintf("upstream answered protocol version %q but %q is pinned", clip(res.ProtocolVersion), offer), nil)
	case !slices.Contains(mcp.LegacyRevisions(), res.ProtocolVersion):
		return protoErr(fmt.Sprintf("upstream answered unsupported protocol version %q", clip(res.ProtocolVersion)), nil)
	}
	s.info = Info{
		Era:          mcp.EraLegacy,
		Version:      res.ProtocolVersion,
		Capabilities: res.Capabilities,
		ServerInfo:   res.ServerInfo,
		Instructions: strings.TrimSpace(res.Instructions),
	}
	tr := s.transport()
	tr.negotiated(res.ProtocolVersion)
	nctx, cancel := context.WithTimeout(ctx, e.requestTimeout)
	defer cancel()
	if err := tr.send(nctx, jsonrpc.EncodeNotification(mcp.MethodInitialized, nil)); err != nil {
		if ctx.Err() == nil && nctx.Err() != nil {
			return e.timedOut(mcp.MethodInitialized, e.requestTimeout)
		}
		return err
	}
	// The session's GET stream is opened when a call or a follower needs it
	// (Client.FollowContext), not here.
	return nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
