package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// TransportLocal is an upstream answered in process by Config.Local (an
// OpenAPI document served as tools): no connection, no child.
const TransportLocal = "local"

// LocalServer answers a local upstream's tools in process. It is given the
// session's headers (static headers and credentials, as an HTTP upstream
// would receive them) to make its own requests with.
type LocalServer interface {
	// Tools returns the tools/list result (one page, no cursor).
	Tools() json.RawMessage
	// CallTool runs one tools/call (params as sent) and returns its result;
	// an error is a JSON-RPC error to the caller.
	CallTool(ctx context.Context, params json.RawMessage, hdr http.Header) (json.RawMessage, error)
	// Implementation names the server in its initialize answer.
	Implementation() mcp.Implementation
}

// localDefaults checks a local upstream's configuration: it speaks the
// newest legacy revision (its session is an initialize handshake with
// itself), so auto is pinned to it and a modern revision refused.
func localDefaults(cfg *Config) error {
	if cfg.Local == nil {
		return fmt.Errorf("server %q: local transport needs its server", cfg.Name)
	}
	if cfg.ProtocolVersion == VersionAuto {
		cfg.ProtocolVersion = mcp.LatestLegacy
	}
	if mcp.IsModern(cfg.ProtocolVersion) {
		return fmt.Errorf("server %q: a local upstream speaks legacy revisions, not %s", cfg.Name, cfg.ProtocolVersion)
	}
	return nil
}

// localDialer opens localTransports: one per session, each only a view of
// the one LocalServer with the session's headers.
type localDialer struct {
	srv LocalServer
}

func (d *localDialer) dial(_ context.Context, _ verdict, p peer, _ bool) (transport, error) {
	return &localTransport{srv: d.srv, hdr: p.hdr}, nil
}

func (d *localDialer) answered() {}

// localTransport answers a legacy session's requests itself: initialize,
// ping, tools/list and tools/call; anything else is method not found.
type localTransport struct {
	srv LocalServer
	hdr headerFunc
}

func (t *localTransport) call(ctx context.Context, _ *exchange, r outgoing) (*jsonrpc.Message, error) {
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(r.body, &req); err != nil {
		return nil, protoErr("local upstream: undecodable request", err)
	}
	m := &jsonrpc.Message{ID: r.id}
	switch r.method {
	case mcp.MethodInitialize:
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		m.Result, _ = json.Marshal(map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      t.srv.Implementation(),
		})
	case mcp.MethodPing:
		m.Result = json.RawMessage(`{}`)
	case mcp.MethodToolsList:
		m.Result = t.srv.Tools()
	case mcp.MethodToolsCall:
		hdr, _, err := t.hdr(ctx)
		if err != nil {
			return nil, err
		}
		res, err := t.srv.CallTool(ctx, req.Params, hdr)
		if err != nil {
			m.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			break
		}
		m.Result = res
	default:
		m.Error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + r.method}
	}
	return m, nil
}

func (t *localTransport) send(context.Context, []byte) error { return nil }
func (t *localTransport) expired() bool                      { return false }
func (t *localTransport) sharedStream() bool                 { return false }
func (t *localTransport) negotiated(string)                  {}
func (t *localTransport) follow(context.Context) (context.Context, func()) {
	return nil, func() {}
}
func (t *localTransport) standing() bool              { return false }
func (t *localTransport) abandoned()                  {}
func (t *localTransport) close(context.Context) error { return nil }
