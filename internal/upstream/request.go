package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// request runs one operation on the ready session, under the per-request
// timeout. same is a result the answer is likely to repeat (outgoing.same),
// or nil.
func (s *session) request(ctx context.Context, method string, params json.RawMessage, in *Interactions, same json.RawMessage) (Result, error) {
	raw, err := s.rawRequest(ctx, method, params, in, s.info.Era == mcp.EraModern, same)
	if err != nil {
		return Result{}, err
	}
	s.e.answered()
	res := Result{Raw: raw}
	if s.info.Era == mcp.EraModern {
		switch rt := jsonrpc.Member(raw, "resultType"); string(rt) {
		case "", `"` + mcp.ResultTypeComplete + `"`:
		case `"` + mcp.ResultTypeInputRequired + `"`:
			res.InputRequired = true
		default:
			return Result{}, protoErr("invalid MCP response: unknown resultType", nil)
		}
	}
	return res, nil
}

// rawRequest sends one request and returns the raw result.
func (s *session) rawRequest(ctx context.Context, method string, params json.RawMessage, in *Interactions, modern bool, same json.RawMessage) (json.RawMessage, error) {
	tr := s.transport()
	if tr == nil {
		return nil, connErr("upstream session was closed", nil)
	}
	budget := s.e.requestTimeout
	if method == mcp.MethodSubscriptionsListen {
		budget = 1<<63 - 1 // a listen lasts until the caller ends it
	}
	rctx := ctx
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > budget || method == mcp.MethodSubscriptionsListen {
		// A context that ends before the budget anyway (a list walk's,
		// under the shorter listing timeout) is the request's own: a child
		// of it would cost a context and a registration per request.
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	resp, err := s.send(ctx, rctx, tr, method, params, in, modern, same)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusUnauthorized && se.minted != "" {
		// A minted token the upstream no longer accepts: refresh it once
		// and retry once.
		s.e.creds.refused(se.minted)
		resp, err = s.send(ctx, rctx, tr, method, params, in, modern, same)
	}
	if err != nil {
		return nil, err
	}
	return resultOf(resp, 0)
}

// send encodes and sends one request under a fresh id.
func (s *session) send(ctx, rctx context.Context, tr transport, method string, params json.RawMessage, in *Interactions, modern bool, same json.RawMessage) (*jsonrpc.Message, error) {
	e := s.e
	n := e.ids.Add(1)
	id := jsonrpc.IntID(n)
	var rewrite int64 // 0: progress tokens pass as sent
	if tr.sharedStream() {
		rewrite = n
	}
	var meta json.RawMessage
	if modern {
		var err error
		if meta, err = s.metaFor(in); err != nil {
			return nil, err
		}
	}
	p, err := prepareParams(params, meta, rewrite)
	if err != nil {
		return nil, &RPCError{Err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%v", err)}
	}
	out := outgoing{id: id, method: method, body: jsonrpc.EncodeRequest(id, method, p.params), modern: modern, same: same}
	if modern && !tr.sharedStream() {
		// Mcp-Name and Mcp-Param-* are HTTP headers: a shared stream
		// (stdio) has nowhere to carry them.
		out.name = nameParam(method, params)
		if method == mcp.MethodToolsCall {
			out.header = e.params.headersFor(out.name, jsonrpc.Member(params, "arguments"))
		}
	}
	out.handshake = method == mcp.MethodInitialize
	ex := &exchange{env: e.env, in: in, method: method, token: p.callerToken, upToken: p.upToken, cred: s.notify}
	resp, err := tr.call(rctx, ex, out)
	if err != nil {
		return nil, s.callFailed(ctx, rctx, tr, out, err)
	}
	return resp, nil
}

// callFailed classifies a failed call and, when it was abandoned, tells the
// upstream so it can stop the work.
func (s *session) callFailed(ctx, rctx context.Context, tr transport, out outgoing, err error) error {
	e := s.e
	var nd *undeliveredError
	undelivered := errors.As(err, &nd)
	if undelivered {
		err = nd.err
	}
	abandoned := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if !abandoned {
		return err
	}
	s.noteAbandoned(ctx, rctx)
	// A modern HTTP request is cancelled by closing its stream, which has
	// happened; everywhere else the upstream must be told, unless it never
	// received the whole request.
	if !undelivered && !s.ephemeral && !(out.modern && !tr.sharedStream()) && out.method != mcp.MethodInitialize {
		sendCancelled(tr, out.id, e.env)
	}
	if ctx.Err() == nil && rctx.Err() != nil {
		return e.timedOut(out.method, e.requestTimeout)
	}
	return err
}

func sendCancelled(tr transport, id jsonrpc.ID, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupBudget)
	defer cancel()
	params := append(append([]byte(`{"requestId":`), id.Raw()...), `,"reason":"request cancelled by the gateway"}`...)
	if err := tr.send(ctx, jsonrpc.EncodeNotification(mcp.NotifCancelled, params)); err != nil {
		e.log.Debug("could not send notifications/cancelled", "err", causeText(err))
	}
}

// nameParam returns the Mcp-Name value of a request (tool or prompt name,
// resource URI), or "".
func nameParam(method string, params json.RawMessage) string {
	key := mcp.NameParam(method)
	if key == "" || len(params) == 0 {
		return ""
	}
	name, _ := jsonrpc.Unquote(jsonrpc.Member(params, key))
	return name
}

// metaFor returns the modern request _meta for a call with these
// interactions: what the caller of this call can answer is what the upstream
// is told, request by request. Each capability set's _meta is built once per
// session.
func (s *session) metaFor(in *Interactions) (json.RawMessage, error) {
	set := in.capBits(Offer{})
	if m := s.metas[set].Load(); m != nil {
		return *m, nil
	}
	m, err := mcp.RequestMeta(mcp.Latest, capSets[set].json, s.e.clientInfo)
	if err != nil {
		return nil, err
	}
	s.metas[set].Store(&m)
	return m, nil
}
