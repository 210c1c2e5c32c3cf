package guardrail

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/identity"
)

// Path is where a generic guardrail API is asked, below its api_base.
const Path = "/beta/litellm_basic_guardrail_api"

// Defaults and bounds.
const (
	// DefaultMaxConcurrent bounds the guardrail requests in flight at once, across guardrails;
	// a request waits for room within its own timeout.
	DefaultMaxConcurrent = 64
	// maxAnswerBytes bounds a guardrail's answer.
	maxAnswerBytes = 4 << 20
)

// The actions a guardrail answers with.
const (
	ActionNone        = "NONE"
	ActionBlocked     = "BLOCKED"
	ActionIntervened  = "GUARDRAIL_INTERVENED"
	inputTypeRequest  = "request"
	inputTypeResponse = "response"
)

// Outcomes counted by Config.OnCheck.
const (
	OutcomeNone       = "none"
	OutcomeBlocked    = "blocked"
	OutcomeIntervened = "intervened"
	OutcomeFailOpen   = "failed_open"
	OutcomeFailClosed = "failed_closed"
)

// request is the generic guardrail API's request body.
type request struct {
	Texts            []string          `json:"texts"`
	Tools            []toolParam       `json:"tools,omitempty"`
	RequestData      map[string]string `json:"request_data"`
	InputType        string            `json:"input_type"`
	CallID           string            `json:"litellm_call_id"`
	AdditionalParams map[string]string `json:"additional_provider_specific_params,omitempty"`
}

// toolParam names the MCP tool in OpenAI's tool shape.
type toolParam struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Arguments   string `json:"arguments,omitempty"`
}

// answer is the generic guardrail API's response body.
type answer struct {
	Action        string   `json:"action"`
	BlockedReason string   `json:"blocked_reason"`
	Texts         []string `json:"texts"`
}

// verdict is one guardrail's word: blocked (with its reason), rewritten texts, or none.
type verdict struct {
	blocked bool
	reason  string
	texts   []string // set for GUARDRAIL_INTERVENED
}

// rail is one configured guardrail.
type rail struct {
	cfg config.Guardrail
	url string
}

// ask posts one request to the guardrail within its timeout and the shared concurrency
// bound. Errors never quote the guardrail's answer.
func (g *Guard) ask(ctx context.Context, r *rail, body request) (verdict, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	case <-ctx.Done():
		return verdict{}, errors.New("no room for the guardrail request within its timeout")
	}
	body.AdditionalParams = r.cfg.Params
	data, err := json.Marshal(body)
	if err != nil {
		return verdict{}, fmt.Errorf("encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(data))
	if err != nil {
		return verdict{}, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range r.cfg.Headers {
		req.Header.Set(k, v)
	}
	if r.cfg.APIKey.IsSet() {
		req.Header.Set("x-api-key", r.cfg.APIKey.Reveal())
	}
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return verdict{}, errors.New("timed out")
		}
		return verdict{}, errors.New("unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
		return verdict{}, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	var a answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&a); err != nil {
		return verdict{}, errors.New("answered something that is not its JSON answer")
	}
	switch strings.ToUpper(a.Action) {
	case ActionBlocked:
		reason := a.BlockedReason
		if reason == "" {
			reason = "Content violates policy"
		}
		return verdict{blocked: true, reason: reason}, nil
	case ActionIntervened:
		if a.Texts == nil {
			return verdict{}, nil
		}
		if len(a.Texts) != len(body.Texts) {
			return verdict{}, errors.New("answered a different number of texts")
		}
		return verdict{texts: a.Texts}, nil
	case ActionNone, "":
		return verdict{}, nil
	}
	return verdict{}, errors.New("answered an unknown action")
}

// callID is a fresh litellm_call_id.
func callID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestData is the caller's metadata as LiteLLM sends it (user_api_key_*), plus the MCP
// server and tool.
func requestData(c *identity.Caller, server, tool string) map[string]string {
	m := map[string]string{"mcp_server_name": server, "mcp_tool_name": tool}
	if c == nil {
		return m
	}
	for k, v := range map[string]string{
		"user_api_key_hash": c.KeyHash, "user_api_key_alias": c.KeyAlias, "user_api_key_user_id": c.UserID,
		"user_api_key_team_id": c.TeamID, "user_api_key_team_alias": c.TeamAlias,
		"user_api_key_org_id": c.OrgID, "user_api_key_end_user_id": c.EndUserID,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// logFailure warns that a guardrail could not be asked (never its texts or answer).
func (g *Guard) logFailure(r *rail, mode, server, tool string, err error) {
	g.log.Warn("guardrail not answered", "guardrail", r.cfg.Name, "mode", mode, "server", server, "tool", tool,
		"fail_open", r.cfg.FailOpen, "reason", err.Error())
}

// discard is a logger that drops everything.
func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
