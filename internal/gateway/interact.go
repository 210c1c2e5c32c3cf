package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/seal"
	"github.com/mcpgw/mcpgw/internal/upstream"
)

// ContinuationPurpose is the seal purpose of MRTR continuations.
const ContinuationPurpose = "mcp-continuation"

// ContinuationPrefix starts every gateway requestState.
const ContinuationPrefix = "mcp_state_v1."

// continuationTTL is how long a continuation may be resumed.
const continuationTTL = 10 * time.Minute

// maxRounds bounds the input rounds the gateway drives itself.
const maxRounds = 10

// Messages the caller sees; fixed so they never carry upstream text.
const (
	msgInvalidContinuation = "Invalid or expired MCP continuation; start a fresh request"
	msgNeedsContinuation   = "Input responses require a gateway continuation"
	msgNoSaltKey           = "MCP continuations are disabled: set the same LITELLM_SALT_KEY on every replica to enable MCP continuations"
	msgTargetRevoked       = "MCP continuation target is no longer authorized"
	msgLegacyCannotResume  = "The upstream server speaks a legacy protocol revision and its request for input was cancelled: a legacy upstream cannot resume input across requests, so the work may be partially completed. Retry with a client that keeps a legacy session, or ask the operator."
)

// Sampler fulfils sampling/createMessage requests through a configured model.
type Sampler interface {
	CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

// continuation is what a gateway requestState carries, sealed. It binds the
// token to the caller, the operation and the target; the upstream's own
// state rides inside and never reaches the caller in clear.
type continuation struct {
	Principal string                     `json:"p"`           // caller binding and scope
	Operation string                     `json:"o"`           // digest of method + params
	Server    string                     `json:"s"`           // the target server's name
	Target    string                     `json:"t"`           // digest of its configuration
	State     string                     `json:"u,omitempty"` // the upstream's requestState
	Responses map[string]json.RawMessage `json:"r,omitempty"` // answers the gateway already gave
	Expires   int64                      `json:"e"`           // unix ms of the first seal
	// Authorize marks the gateway's own request that the user authorize
	// Server (askToAuthorize): the retry runs the call again.
	Authorize bool `json:"a,omitempty"`
}

// operationDigest hashes the method and the params without _meta,
// inputResponses and requestState, in canonical form.
func operationDigest(method string, params json.RawMessage) (string, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	delete(m, "_meta")
	delete(m, "inputResponses")
	delete(m, "requestState")
	b, err := json.Marshal(map[string]any{"method": method, "params": m})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TargetDigest hashes what makes a server the same target: a continuation
// minted for it is refused once any of these change.
func TargetDigest(serverID, url, transport, protocolVersion, command string, args []string) string {
	b, _ := json.Marshal([]any{serverID, url, transport, protocolVersion, command, args})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (g *Gateway) seal(c continuation) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	ttl := time.Until(time.UnixMilli(c.Expires))
	if ttl <= 0 {
		return "", seal.ErrExpired
	}
	tok, err := g.cfg.Continuations.Seal(ContinuationPurpose, b, ttl)
	if err != nil {
		return "", err
	}
	return ContinuationPrefix + tok, nil
}

func (g *Gateway) open(tok string) (continuation, error) {
	var c continuation
	raw, ok := strings.CutPrefix(tok, ContinuationPrefix)
	if !ok {
		return c, seal.ErrInvalid
	}
	b, err := g.cfg.Continuations.Open(ContinuationPurpose, raw)
	if err != nil {
		return c, err
	}
	err = json.Unmarshal(b, &c)
	return c, err
}

func invalidContinuation() Outcome {
	return fail(fault.InvalidParams, "%s", msgInvalidContinuation)
}

// resume continues an operation an earlier answer suspended: it verifies
// every binding before any upstream contact, then retries the original
// target with the upstream's own state and the caller's responses.
func (g *Gateway) resume(ctx context.Context, op *Operation) Outcome {
	rawState := jsonrpc.Member(op.Params, "requestState")
	if rawState == nil {
		return fail(fault.InvalidParams, "%s", msgNeedsContinuation)
	}
	if g.cfg.Continuations == nil {
		return fail(fault.InvalidParams, "%s", msgNoSaltKey)
	}
	tok, ok := stringMember(op.Params, "requestState")
	if !ok {
		return invalidContinuation()
	}
	c, err := g.open(tok)
	if err != nil || c.Principal != op.binding() {
		return invalidContinuation()
	}
	digest, err := operationDigest(op.Method, op.Params)
	if err != nil || digest != c.Operation {
		return invalidContinuation()
	}
	s := g.servers[c.Server]
	if s == nil || s.TargetDigest != c.Target {
		return invalidContinuation()
	}
	if c.Authorize && op.Method == mcp.MethodToolsCall {
		return g.resumeAuthorized(ctx, op, c.Server)
	}
	servers := g.visible(op)
	visible := false
	for _, name := range servers {
		visible = visible || name == c.Server
	}
	params := op.Params
	if op.Method == mcp.MethodToolsCall || op.Method == mcp.MethodPromptsGet {
		name, _ := stringMember(op.Params, "name")
		server, bare, ok := g.cfg.Catalog.SplitName(name, servers, !op.Unprefixed)
		if ok && server != c.Server {
			ok = false
		}
		if ok && op.Method == mcp.MethodToolsCall && !g.cfg.Policy.ToolAllowed(op.Caller, server, bare) {
			ok = false
		}
		if ok && op.Method == mcp.MethodToolsCall && g.ruleRefusal(ctx, op, g.query(op, servers), server, bare) != nil {
			ok = false
		}
		if !ok {
			visible = false
		} else if params, err = jsonrpc.SetMember(params, "name", jsonrpc.AppendString(nil, bare)); err != nil {
			return invalidContinuation()
		}
	}
	if !visible {
		return fail(fault.TargetRevoked, "%s", msgTargetRevoked)
	}
	params, err = withInput(params, jsonrpc.Member(op.Params, "inputResponses"), c.Responses, c.State)
	if err != nil {
		return fail(fault.InvalidParams, "invalid inputResponses: %v", err)
	}
	observe.Served(ctx, s.Name)
	if op.Method == mcp.MethodToolsCall {
		if out, refused := g.resumeRefused(ctx, op, c.Server, params); refused {
			return out
		}
	}
	out := g.call(ctx, op, s, len(servers) > 1, params, c)
	if op.Method == mcp.MethodToolsCall {
		out = g.resumeChecked(ctx, op, c.Server, params, out)
		g.forgetLists(op, c.Server) // the call ran on: see callNamed
	}
	return out
}

// withInput sets a retry's inputResponses (the caller's, exactly as sent,
// plus the answers the gateway gave itself) and the upstream's requestState.
func withInput(params, callers json.RawMessage, gateways map[string]json.RawMessage, state string) (json.RawMessage, error) {
	responses := callers
	if len(gateways) > 0 {
		merged := map[string]json.RawMessage{}
		if len(callers) > 0 && string(callers) != "null" {
			if err := json.Unmarshal(callers, &merged); err != nil {
				return nil, err
			}
		}
		for k, v := range gateways {
			if _, ok := merged[k]; !ok {
				merged[k] = v
			}
		}
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		responses = b
	}
	var err error
	if len(responses) > 0 {
		if params, err = jsonrpc.SetMember(params, "inputResponses", responses); err != nil {
			return nil, err
		}
	}
	if state != "" {
		return jsonrpc.SetMember(params, "requestState", jsonrpc.AppendString(nil, state))
	}
	return removeMember(params, "requestState")
}

// removeMember drops a top-level member of a JSON object.
func removeMember(obj json.RawMessage, key string) (json.RawMessage, error) {
	if jsonrpc.Member(obj, key) == nil {
		return obj, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	delete(m, key)
	return json.Marshal(m)
}

// legacyFlags records what an upstream asked of a caller who cannot be
// asked across requests.
type legacyFlags struct{ cancelled atomic.Bool }

// upstreamInteractions answers the server→client requests a legacy upstream
// makes mid-call, and decides the capabilities the upstream is told about:
// elicitation and roots go to a legacy caller's session; sampling is
// fulfilled by the gateway's model when one is configured, else by a caller
// that declared it; a modern caller cannot be asked across requests, so
// the request is cancelled and flagged.
func (g *Gateway) upstreamInteractions(s *Server, op *Operation, flags *legacyFlags) *upstream.Interactions {
	modern := op.modern()
	in := &upstream.Interactions{Progress: op.Progress, Log: op.Log}
	if op.Interactions != nil {
		// A legacy caller's calls run on an upstream session of its own:
		// what the upstream keeps per session (its roots, its log level)
		// must not reach other callers.
		in.Owner = op.Interactions.Owner
	}
	cancel := func(reply string) upstream.Handler {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) {
			flags.cancelled.Store(true)
			if reply == "" {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the caller cannot answer across requests")
			}
			return json.RawMessage(reply), nil
		}
	}
	if s.AllowElicitation {
		switch {
		case op.Interactions != nil && op.Interactions.Elicit != nil:
			in.Elicit = upstream.Handler(op.Interactions.Elicit)
		case modern && CapabilityDeclared(op.ClientCaps, "elicitation"):
			cancelled := cancel(`{"action":"cancel"}`)
			in.Elicit = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
				if _, err := PrepareElicitation(op.ClientCaps, params, false); err != nil {
					return nil, err // a mode the caller did not declare
				}
				return cancelled(ctx, params)
			}
		}
	}
	switch {
	case op.Interactions != nil && op.Interactions.Roots != nil:
		in.Roots = upstream.Handler(op.Interactions.Roots)
	case modern && CapabilityDeclared(op.ClientCaps, "roots"):
		in.Roots = cancel("")
	}
	if s.AllowSampling {
		switch {
		case g.cfg.Sampler != nil: // the gateway answers with its own model
			in.Sample = g.sample
		case op.Interactions != nil && op.Interactions.Sample != nil:
			in.Sample = upstream.Handler(op.Interactions.Sample)
		case modern && CapabilityDeclared(op.ClientCaps, "sampling"):
			in.Sample = cancel("")
		}
	}
	return in
}

// sample fulfils one sampling request through the configured model.
func (g *Gateway) sample(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if g.cfg.Sampler == nil {
		return nil, errors.New("no sampling model is configured (litellm_settings.default_mcp_sampling_model)")
	}
	return g.cfg.Sampler.CreateMessage(ctx, params)
}

// CapabilityDeclared reports whether a ClientCapabilities object has key.
func CapabilityDeclared(caps json.RawMessage, key string) bool {
	if len(caps) == 0 || caps[0] != '{' {
		return false
	}
	v := jsonrpc.Member(caps, key)
	return v != nil && string(v) != "null"
}

// ElicitModes reports the elicitation modes a ClientCapabilities object
// declares: an empty elicitation object means form only.
func ElicitModes(caps json.RawMessage) (form, url bool) {
	if !CapabilityDeclared(caps, "elicitation") {
		return false, false
	}
	e := jsonrpc.Member(caps, "elicitation")
	f, u := CapabilityDeclared(e, "form"), CapabilityDeclared(e, "url")
	return f || !u, u
}

// elicitURLMode reports whether elicitation/create params ask for URL mode.
func elicitURLMode(params json.RawMessage) bool {
	mode, _ := stringMember(params, "mode")
	return mode == "url"
}

// PrepareElicitation checks one elicitation/create request against the
// caller's capabilities: a mode the caller did not declare is refused with
// -32602 (the error to answer the upstream with). A URL-mode request
// without an elicitationId gets one when addID is set (2025-11-25 callers
// need it; 2026-07-28 upstreams send none).
func PrepareElicitation(caps, params json.RawMessage, addID bool) (json.RawMessage, error) {
	form, url := ElicitModes(caps)
	if !elicitURLMode(params) {
		if !form {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "the client does not support form-mode elicitation")
		}
		return params, nil
	}
	if !url {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "the client does not support URL-mode elicitation")
	}
	if id, ok := stringMember(params, "elicitationId"); addID && (!ok || id == "") {
		raw := make([]byte, 16)
		_, _ = rand.Read(raw)
		return jsonrpc.SetMember(params, "elicitationId", jsonrpc.AppendString(nil, hex.EncodeToString(raw)))
	}
	return params, nil
}

// isErrorResult is an in-band tool failure with a fixed text.
func isErrorResult(text string) json.RawMessage { return fault.ToolError(text) }

// call runs one operation on server s, with the interactions its era pair
// needs, and drives or suspends input rounds. prev is the continuation being
// resumed (zero for a fresh request).
func (g *Gateway) call(ctx context.Context, op *Operation, s *Server, multi bool, params json.RawMessage, prev continuation) Outcome {
	opts := g.options(s, op, multi)
	var flags legacyFlags
	opts.Interactions = g.upstreamInteractions(s, op, &flags)
	for round := 0; ; round++ {
		// Only an operation's first request counts against the server's
		// limits: a resume or an answered input round repeats it.
		opts.Retry = round > 0 || prev.Server != ""
		res, err := s.Client.Call(ctx, op.Method, params, opts)
		if flags.cancelled.Load() {
			return Outcome{Result: isErrorResult(msgLegacyCannotResume)}
		}
		if err != nil {
			return g.failure(op, s.Name, err)
		}
		if !res.InputRequired {
			return Outcome{Result: res.Raw}
		}
		if round >= maxRounds {
			return Outcome{Result: isErrorResult("the upstream asked for input more than " + itoa(maxRounds) + " times; the request was abandoned")}
		}
		next, out, done := g.inputRound(ctx, op, s, params, res.Raw, prev)
		if done {
			return out
		}
		params = next
	}
}

// inputRequest is one entry of an InputRequiredResult.
type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// inputRound handles one input_required answer. It fulfils sampling itself;
// what only the caller can answer is asked on a legacy caller's session
// (then it returns the retry's params) or handed to a modern caller with a
// sealed continuation (then done is set with the outcome).
func (g *Gateway) inputRound(ctx context.Context, op *Operation, s *Server, params, raw json.RawMessage, prev continuation) (json.RawMessage, Outcome, bool) {
	var ir struct {
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &ir); err != nil {
		return nil, fail(fault.Relay, "upstream %s: invalid MCP response", s.Name), true
	}
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	gatewayAnswers := map[string]json.RawMessage{}
	var forCaller []string
	var needCaps []string
	for _, k := range keys {
		req := ir.InputRequests[k]
		if !mcp.IsInputRequestMethod(req.Method) {
			return nil, Outcome{Result: isErrorResult("Server '" + s.Name + "' asked for an unsupported kind of input; the request was refused.")}, true
		}
		need := mcp.InputRequestCapability(req.Method)
		switch req.Method {
		case mcp.MethodSamplingCreateMessage:
			if !s.AllowSampling {
				return nil, Outcome{Result: isErrorResult("Server '" + s.Name + "' asked for sampling, which is not allowed for it (allow_sampling is off); the request was refused.")}, true
			}
			if g.cfg.Sampler == nil { // no model here: the caller samples, if it can
				forCaller = append(forCaller, k)
				if !CapabilityDeclared(op.ClientCaps, need) {
					needCaps = append(needCaps, need)
				}
				continue
			}
			ans, err := g.sample(ctx, req.Params)
			if err != nil {
				g.cfg.Logger.Warn("sampling for an upstream failed", "server", s.Name, "err", err.Error())
				return nil, Outcome{Result: isErrorResult("Sampling for server '" + s.Name + "' failed: " + err.Error())}, true
			}
			gatewayAnswers[k] = ans
		case mcp.MethodElicitationCreate:
			if !s.AllowElicitation {
				return nil, Outcome{Result: isErrorResult("Server '" + s.Name + "' asked for user input (elicitation), which is not allowed for it (allow_elicitation is off); the request was refused.")}, true
			}
			forCaller = append(forCaller, k)
			form, url := ElicitModes(op.ClientCaps)
			switch {
			case elicitURLMode(req.Params) && !url:
				needCaps = append(needCaps, capElicitationURL)
			case !elicitURLMode(req.Params) && !form:
				needCaps = append(needCaps, need)
			}
		case mcp.MethodRootsList:
			forCaller = append(forCaller, k)
			if !CapabilityDeclared(op.ClientCaps, need) {
				needCaps = append(needCaps, need)
			}
		}
	}
	if len(needCaps) > 0 {
		return nil, missingCapability(needCaps), true
	}
	if len(forCaller) == 0 || !op.modern() {
		return g.retryWith(ctx, op, params, ir.InputRequests, ir.RequestState, forCaller, gatewayAnswers)
	}
	return nil, g.suspend(op, s, raw, ir.RequestState, forCaller, gatewayAnswers, prev), true
}

// retryWith builds the retry of an input round the gateway answers here:
// its own answers plus those a legacy caller gave on its session.
func (g *Gateway) retryWith(ctx context.Context, op *Operation, params json.RawMessage, reqs map[string]inputRequest, state string, forCaller []string, gatewayAnswers map[string]json.RawMessage) (json.RawMessage, Outcome, bool) {
	answers := map[string]json.RawMessage{}
	for k, v := range gatewayAnswers {
		answers[k] = v
	}
	for _, k := range forCaller {
		ans, err := g.askLegacyCaller(ctx, op, reqs[k])
		if err != nil {
			return nil, Outcome{Result: isErrorResult("The client could not answer a request for input: " + err.Error())}, true
		}
		answers[k] = ans
	}
	b, err := json.Marshal(answers)
	if err != nil {
		return nil, fail(fault.Relay, "cannot encode input responses"), true
	}
	next, err := withInput(params, b, nil, state)
	if err != nil {
		return nil, fail(fault.Relay, "cannot build the retry"), true
	}
	return next, Outcome{}, false
}

// askLegacyCaller sends one input request to a legacy caller's session.
func (g *Gateway) askLegacyCaller(ctx context.Context, op *Operation, req inputRequest) (json.RawMessage, error) {
	var h Asker
	if op.Interactions != nil {
		switch req.Method {
		case mcp.MethodElicitationCreate:
			h = op.Interactions.Elicit
		case mcp.MethodRootsList:
			h = op.Interactions.Roots
		case mcp.MethodSamplingCreateMessage:
			h = op.Interactions.Sample
		}
	}
	if h == nil {
		return nil, errors.New("the client's session cannot take " + req.Method)
	}
	return h(ctx, req.Params)
}

// capElicitationURL names URL-mode elicitation among missing capabilities.
const capElicitationURL = "elicitation.url"

// missingCapability names what the caller must declare.
func missingCapability(caps []string) Outcome {
	req := map[string]json.RawMessage{}
	for _, c := range caps {
		if c == capElicitationURL {
			req[mcp.CapElicitation] = json.RawMessage(`{"url":{}}`)
			continue
		}
		req[c] = json.RawMessage(`{}`)
	}
	data, _ := json.Marshal(mcp.MissingCapabilityData{RequiredCapabilities: req})
	names := strings.Join(caps, ", ")
	return Failed(&fault.Fault{Class: fault.MissingCapability, Message: "client capability required: " + names, Subject: names, Data: data})
}

// suspend hands the caller the upstream's input requests (minus those the
// gateway answered) with a sealed continuation in place of the upstream's
// state.
func (g *Gateway) suspend(op *Operation, s *Server, raw json.RawMessage, state string, forCaller []string, answers map[string]json.RawMessage, prev continuation) Outcome {
	if g.cfg.Continuations == nil {
		return fail(fault.InvalidParams, "%s", msgNoSaltKey)
	}
	digest, err := operationDigest(op.Method, op.Params)
	if err != nil {
		return fail(fault.InvalidParams, "invalid params")
	}
	c := continuation{Principal: op.binding(), Operation: digest, Server: s.Name, Target: s.TargetDigest,
		State: state, Responses: answers, Expires: prev.Expires}
	if c.Expires == 0 {
		c.Expires = time.Now().Add(continuationTTL).UnixMilli()
	}
	tok, err := g.seal(c)
	if err != nil {
		if errors.Is(err, seal.ErrExpired) {
			return invalidContinuation()
		}
		return fail(fault.Relay, "cannot seal the continuation")
	}
	out, err := jsonrpc.SetMember(raw, "requestState", jsonrpc.AppendString(nil, tok))
	if err == nil && len(answers) > 0 {
		var all map[string]json.RawMessage
		if json.Unmarshal(jsonrpc.Member(raw, "inputRequests"), &all) == nil {
			kept := map[string]json.RawMessage{}
			for _, k := range forCaller {
				kept[k] = all[k]
			}
			b, _ := json.Marshal(kept)
			out, err = jsonrpc.SetMember(out, "inputRequests", b)
		}
	}
	if err != nil {
		return fail(fault.Relay, "cannot encode the continuation")
	}
	return Outcome{Result: out, InputRequired: true}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
