package upstream

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// transport carries JSON-RPC messages to one upstream connection: a streamable
// HTTP endpoint, a legacy HTTP+SSE stream or a stdio child process.
type transport interface {
	// call sends one request and waits for its response; server→client traffic
	// for it is handed to ex.
	call(ctx context.Context, ex *exchange, r outgoing) (*jsonrpc.Message, error)
	// send delivers a notification or a response; no answer is expected.
	send(ctx context.Context, body []byte) error
	// expired reports that the upstream ended the session: the next operation
	// needs a new one.
	expired() bool
	// sharedStream reports whether many requests share one message stream, so
	// progress tokens must be made unique and server requests correlated.
	sharedStream() bool
	close(ctx context.Context) error
}

// headerFunc returns the headers for one HTTP request of a session: static
// headers and credentials, with the minted token they carry ("" for none).
type headerFunc func(ctx context.Context) (h http.Header, minted string, err error)

// outgoing is one request as the transport sends it.
type outgoing struct {
	id     jsonrpc.ID
	method string
	body   []byte // the encoded request
	// name is the Mcp-Name value (modern HTTP only).
	name string
	// header holds the Mcp-Param-* headers (modern HTTP only).
	header http.Header
	modern bool
	// handshake marks the legacy initialize request, whose response carries
	// the session id.
	handshake bool
}

// responseTo reports whether m answers request id.
func responseTo(m *jsonrpc.Message, id jsonrpc.ID) bool {
	return m.IsResponse() && m.ID == id
}

// resultOf converts a response message into the result or the upstream error.
func resultOf(m *jsonrpc.Message, status int) (json.RawMessage, error) {
	if m.Error != nil {
		return nil, &RPCError{Err: m.Error, HTTPStatus: status}
	}
	return m.Result, nil
}
