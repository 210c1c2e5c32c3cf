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
	// negotiated records the revision the session settled on, for
	// transports that state it on every message (MCP-Protocol-Version).
	negotiated(version string)
	// follow holds the channel on which the upstream sends what belongs to
	// no request until release is called, and returns when the upstream has
	// answered it or after a short bound. A legacy streamable HTTP session
	// opens its GET stream for the first holder and closes it streamLinger
	// after the last one let go; a modern session has none. lost, when not
	// nil, ends when that channel ends other than by release or close (the
	// upstream closed the GET stream, the HTTP+SSE connection dropped, the
	// stdio child died): what it carried is gone.
	follow(ctx context.Context) (lost context.Context, release func())
	// standing reports whether the transport's one connection lasts as long
	// as the session and is the upstream's channel for what belongs to no
	// request (legacy HTTP+SSE): the upstream counts it as a listener, so a
	// followed session on it is ended, not kept idle, once its last follower
	// and call have left.
	standing() bool
	// abandoned reports that a request on the session was given up: ending
	// the session must not wait behind a connection that request may still
	// hold.
	abandoned()
	close(ctx context.Context) error
}

// dialer opens the transports of one Client's sessions. Each transport file
// has its own, which New picks by Config.Transport: adding a transport is
// adding a file with a transport and its dialer.
type dialer interface {
	// dial opens a transport for the session p describes, to speak era v
	// (verdictSSE: the legacy HTTP+SSE transport). again marks a transport
	// reopened at once because the previous one did not survive the era
	// probe: no restart backoff applies.
	dial(ctx context.Context, v verdict, p peer, again bool) (transport, error)
	// answered reports that the upstream answered a request.
	answered()
}

// newDialer returns the dialer of the configured transport (Config.Transport,
// validated by Config.withDefaults).
func newDialer(e *env, cfg *Config, creds *credentials) dialer {
	if cfg.Transport == TransportStdio {
		return newStdioDialer(e, cfg)
	}
	if cfg.Transport == TransportLocal {
		return &localDialer{srv: cfg.Local}
	}
	return newHTTPDialer(e, cfg.URL, cfg.HTTPClient, creds)
}

// peer is what a dialer needs to know of the session it opens a transport
// for.
type peer struct {
	hdr    headerFunc // the session's headers: static ones and credentials
	notify string     // names the session for its notifications (OwnerKey)
	// owned marks one caller's own session (Interactions.Owner), whose
	// downstream session hears what it sends outside requests without
	// following it.
	owned bool
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
	// same is a result this request's answer is likely to repeat byte for
	// byte (the last walk's page): an answer whose result equals it is
	// returned with same as its result, and the bytes it was read into are
	// not copied (see httpTransport.readStream). nil: none.
	same json.RawMessage
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
