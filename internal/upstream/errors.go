package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// RPCError is a JSON-RPC error answered by the upstream (or synthesised from
// an HTTP answer that the protocol defines as one, such as a 404 on a session).
type RPCError struct {
	Err        *jsonrpc.Error
	HTTPStatus int // the HTTP status that carried it; 0 on stdio

	// sessionEnded: the upstream refused the request because it no longer
	// knows the session, so it did nothing with it.
	sessionEnded bool
}

// Error implements error.
func (e *RPCError) Error() string { return "upstream error: " + e.Err.Error() }

// Code returns the JSON-RPC error code.
func (e *RPCError) Code() int64 { return e.Err.Code }

// StatusError is an HTTP answer that is not an MCP message. The upstream body
// is never kept: it may echo secrets.
type StatusError struct {
	Status int
	// Challenge is the WWW-Authenticate header of a 401/403, kept so the caller
	// can pass it on.
	Challenge string

	minted string // the minted token the refused request carried, for one refresh
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("upstream answered HTTP %d %s", e.Status, http.StatusText(e.Status))
}

// ProtocolError means the upstream broke the MCP or JSON-RPC rules: an invalid
// response, an unsupported content type, a refused protocol version.
type ProtocolError struct {
	Msg string
	Err error // underlying cause, if any (never an upstream body)
}

// Error implements error.
func (e *ProtocolError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + causeText(e.Err)
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *ProtocolError) Unwrap() error { return e.Err }

// ConnectionError means the conversation with the upstream broke: it could not
// be reached, the connection or stream closed early, or the process exited.
type ConnectionError struct {
	Msg string
	Err error
}

// Error implements error.
func (e *ConnectionError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + causeText(e.Err)
	}
	return e.Msg
}

// causeText is err's text with any URL net/http put in it (a *url.Error
// names the whole URL, path and query included) redacted as redactURL does.
func causeText(err error) string {
	text := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		safe := redactURL(ue.URL)
		text = strings.ReplaceAll(text, strconv.Quote(ue.URL), strconv.Quote(safe))
		text = strings.ReplaceAll(text, ue.URL, safe)
	}
	return text
}

// Unwrap returns the cause.
func (e *ConnectionError) Unwrap() error { return e.Err }

// badURL replaces an error about a URL that cannot be used, whose text
// would repeat the URL (and a credential in it).
func badURL() error { return protoErr("invalid upstream URL", nil) }

// ErrClosed is returned for operations on a closed Client.
var ErrClosed = errors.New("upstream client is closed")

func protoErr(msg string, err error) error { return &ProtocolError{Msg: msg, Err: err} }

func connErr(msg string, err error) error { return &ConnectionError{Msg: msg, Err: netCause(err)} }

// netCause drops the *url.Error wrapper from a transport error: its text
// repeats the request URL, which may carry a credential in its query.
func netCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sessionEnded reports whether err is an upstream's refusal of a request
// on a session it no longer knows: the request was not acted on.
func sessionEnded(err error) bool {
	re := rpcErr(err)
	return re != nil && re.sessionEnded
}

// rpcErr returns the RPCError in err's chain, if any.
func rpcErr(err error) *RPCError {
	var re *RPCError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// redactURL returns scheme://host/ and the first path segment of a
// configured URL, for logs and errors: userinfo, query and the rest of the
// path (/…/<token>/mcp) may carry credentials. Later segments become "…".
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	out := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	if path == "" {
		if u.Path == "/" {
			out += "/"
		}
		return out
	}
	first, _, more := strings.Cut(path, "/")
	if first == "" {
		return out + "/…" // an empty first segment ("//x"): nothing to show
	}
	out += "/" + first
	if more {
		out += "/…"
	}
	return out
}
