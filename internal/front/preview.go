package front

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// PreviewOp is what a server preview does with the posted config.
type PreviewOp int

// The preview operations.
const (
	// PreviewConnection connects (handshake) and disconnects.
	PreviewConnection PreviewOp = iota
	// PreviewTools lists the server's tools.
	PreviewTools
)

// PreviewResult is a preview's outcome.
type PreviewResult struct {
	// Refused, when non-zero, is the HTTP status of a request refused before
	// any upstream was contacted (400: the config is invalid; 403: this
	// gateway does not allow what it asks for); Message says why.
	Refused int
	// Param names the field a refusal is about, when one is.
	Param string
	// Fault is the failed upstream operation's fault class; empty on success.
	Fault string
	// Message is the refusal's or failure's text, free of secrets and upstream bodies.
	Message string
	// Tools are the upstream's tools (PreviewTools), as it sent them.
	Tools []json.RawMessage
}

// PreviewConfig is what the server previews are built from.
type PreviewConfig struct {
	Auth *identity.Authenticator
	// Run tries the posted server config (a LiteLLM NewMCPServerRequest) on
	// a throwaway upstream client, within ctx, and closes it.
	Run    func(ctx context.Context, op PreviewOp, body []byte) PreviewResult
	Logger *slog.Logger
}

// Preview serves POST /mcp-rest/test/connection and POST
// /mcp-rest/test/tools/list: LiteLLM's "try a server before adding it",
// for the proxy admin only. Nothing is saved.
type Preview struct{ cfg PreviewConfig }

// NewPreview returns the server preview routes.
func NewPreview(cfg PreviewConfig) *Preview {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Preview{cfg: cfg}
}

// maxPreviewBody bounds a preview's request body.
const maxPreviewBody = 1 << 20

// Register adds the preview routes to mux.
func (p *Preview) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /mcp-rest/test/connection", func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, PreviewConnection)
	})
	mux.HandleFunc("POST /mcp-rest/test/tools/list", func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, PreviewTools)
	})
}

// serve authenticates the proxy admin, reads the body and answers the
// preview in LiteLLM's shapes: {"status":"ok"} for a connection,
// {"tools":[…],"error":null,"message":…} for a listing, and for an upstream
// failure 200 {"status":"error","error":<fault class>,"message":…} (a
// listing's with "tools":[]), as LiteLLM answers a failed preview.
func (p *Preview) serve(w http.ResponseWriter, r *http.Request, op PreviewOp) {
	caller, err := p.cfg.Auth.Authenticate(r.Context(), r, r.URL.Path)
	if err != nil {
		var ae *identity.Error
		status, msg := http.StatusUnauthorized, "authentication required"
		if errors.As(err, &ae) {
			status, msg = ae.Status, ae.Message
			if ae.Challenge != "" {
				w.Header().Set("WWW-Authenticate", ae.Challenge)
			}
		}
		keyError(w, status, "auth_error", "", msg)
		return
	}
	if !(manager{caller: caller}).admin() {
		forbid(w, "only the proxy admin (the master key or a proxy_admin user) may call "+r.URL.Path)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPreviewBody))
	if err != nil {
		keyError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request body unreadable or larger than 1 MiB")
		return
	}
	res := p.cfg.Run(r.Context(), op, body)
	switch {
	case res.Refused != 0:
		keyError(w, res.Refused, "invalid_request_error", res.Param, res.Message)
	case res.Fault != "":
		out := map[string]any{"status": "error", "error": res.Fault, "message": res.Message}
		if op == PreviewTools {
			out["tools"] = []json.RawMessage{}
		}
		writeJSON(w, http.StatusOK, out)
	case op == PreviewTools:
		tools := res.Tools
		if tools == nil {
			tools = []json.RawMessage{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"tools": tools, "error": nil, "message": "Successfully retrieved tools"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	}
}
