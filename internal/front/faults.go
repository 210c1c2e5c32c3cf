package front

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/limits"
)

// answer is an outcome as one surface answers it: a fault encoded by the
// fault table (fault.Encode), or the result, with the headers to send
// (the challenge, Retry-After). Exactly one of err, detail and result is
// set.
type answer struct {
	status     int
	err        *jsonrpc.Error
	detail     string
	result     json.RawMessage
	challenge  string
	retryAfter int         // seconds; 0 for none
	rateLimit  [][2]string // x-ratelimit-* headers; nil for none
}

// answerOf encodes out for surface s. Results that a fault turned into an
// in-band result are answered as any result is.
func answerOf(s fault.Surface, method string, out gateway.Outcome) answer {
	if out.Fault == nil {
		return answer{status: http.StatusOK, result: out.Result}
	}
	a := fault.Encode(s, method, out.Fault)
	return answer{status: a.Status, err: a.Err, detail: a.Detail, result: a.Result, challenge: a.Challenge, retryAfter: a.RetryAfter, rateLimit: a.RateLimit}
}

// writeDetail answers LiteLLM's refusal shape, {"detail": …}.
func writeDetail(w http.ResponseWriter, a answer) {
	writeJSONValue(w, a.status, map[string]string{"detail": a.detail})
}

// setFaultHeaders sends the headers a fault's answer carries: the
// upstream's WWW-Authenticate, and Retry-After with the x-ratelimit-*
// headers when a limit refused it.
func setFaultHeaders(w http.ResponseWriter, a answer) {
	if a.challenge != "" {
		w.Header().Set("WWW-Authenticate", a.challenge)
	}
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
	}
	for _, h := range a.rateLimit {
		w.Header().Set(h[0], h[1])
	}
}

// setUsageHeaders sends LiteLLM's x-ratelimit-* headers on an answer that
// limits admitted: what the tightest of them has left (none when no limit
// applied).
func setUsageHeaders(w http.ResponseWriter, u *limits.Usage) {
	for _, h := range u.Headers() {
		w.Header().Set(h[0], h[1])
	}
}
