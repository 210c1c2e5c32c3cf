package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// want is one cell of the fault table as the wire shows it: the HTTP status,
// and the JSON-RPC code of an error (0 for an in-band result or a detail
// body).
type want struct {
	status int
	code   int64
	shape  Shape
}

// TestTableEveryClassEverySurface pins what each class looks like on every
// surface, as the gateway answered before the table existed: legacy errors
// ride HTTP 200 except auth refusals (401/403, with the challenge) and a
// revoked continuation target (403, -32600); legacy SSE answers have no
// status; modern errors carry their code's status; REST answers upstream
// faults with their HTTP status.
func TestTableEveryClassEverySurface(t *testing.T) {
	const (
		ip  = jsonrpc.CodeInvalidParams
		mnf = jsonrpc.CodeMethodNotFound
		ie  = jsonrpc.CodeInternalError
		ir  = jsonrpc.CodeInvalidRequest
		hm  = -32020
		mc  = -32021
		rnf = -32002
	)
	rows := map[Class][4]want{ // legacy, legacy SSE, modern, REST
		InvalidParams:     {{200, ip, AsError}, {0, ip, AsError}, {400, ip, AsError}, {400, ip, AsError}},
		MethodNotFound:    {{200, mnf, AsError}, {0, mnf, AsError}, {404, mnf, AsError}, {404, mnf, AsError}},
		HeaderMismatch:    {{200, hm, AsError}, {0, hm, AsError}, {400, hm, AsError}, {400, hm, AsError}},
		UnknownTool:       {{200, 0, InBand}, {0, 0, InBand}, {400, ip, AsError}, {400, ip, AsError}},
		UnknownPrompt:     {{200, ip, AsError}, {0, ip, AsError}, {400, ip, AsError}, {400, ip, AsError}},
		ResourceNotFound:  {{200, rnf, AsError}, {0, rnf, AsError}, {400, ip, AsError}, {400, rnf, AsError}},
		MissingCapability: {{200, 0, InBand}, {0, 0, InBand}, {400, mc, AsError}, {200, 0, InBand}},
		TargetRevoked:     {{403, ir, AsError}, {0, ir, AsError}, {403, 0, AsDetail}, {403, 0, AsDetail}},
		AuthRequired:      {{401, ie, AsError}, {0, ie, AsError}, {401, ie, AsError}, {401, ie, AsError}},
		Forbidden:         {{403, ie, AsError}, {0, ie, AsError}, {403, ie, AsError}, {403, ie, AsError}},
		Timeout:           {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {504, ie, AsError}},
		Unreachable:       {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {502, ie, AsError}},
		UpstreamError:     {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {502, ie, AsError}},
		RateLimited:       {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {429, ie, AsError}},
		Unavailable:       {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {503, ie, AsError}},
		UpstreamInternal:  {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {500, ie, AsError}},
		Relay:             {{200, ie, AsError}, {0, ie, AsError}, {200, ie, AsError}, {502, ie, AsError}},
		Internal:          {{200, ie, AsError}, {0, ie, AsError}, {500, ie, AsError}, {500, ie, AsError}},
		LimitExceeded:     {{429, ie, AsError}, {0, ie, AsError}, {429, ie, AsError}, {429, ie, AsError}},
		LimitsUnavailable: {{503, ie, AsError}, {0, ie, AsError}, {503, ie, AsError}, {503, ie, AsError}},
		// The upstream's own error: its code, verbatim (see TestEncodeUpstreamRPC).
		UpstreamRPC: {{200, -32001, AsError}, {0, -32001, AsError}, {200, -32001, AsError}, {502, -32001, AsError}},
	}
	if len(rows) != int(numClasses)-1 {
		t.Fatalf("%d rows for %d classes", len(rows), numClasses-1)
	}
	surfaces := []Surface{Legacy, LegacySSE, Modern, REST}
	for c := InvalidParams; c < numClasses; c++ {
		row, ok := rows[c]
		if !ok {
			t.Fatalf("class %d has no row", c)
		}
		for i, s := range surfaces {
			t.Run(fmt.Sprintf("class%d/surface%d", c, s), func(t *testing.T) {
				f := &Fault{Class: c, Message: "m", Subject: "x", Data: json.RawMessage(`{"k":1}`), Challenge: "Bearer c"}
				if c == UpstreamRPC {
					f.RPC = &jsonrpc.Error{Code: -32001, Message: "m", Data: json.RawMessage(`{"k":1}`)}
				}
				a := Encode(s, "prompts/get", f)
				w := row[i]
				if a.Status != w.status {
					t.Fatalf("status %d, want %d", a.Status, w.status)
				}
				switch w.shape {
				case AsError:
					if a.Err == nil || a.Err.Code != w.code || a.Err.Message != "m" || string(a.Err.Data) != `{"k":1}` || a.Result != nil || a.Detail != "" {
						t.Fatalf("answer %+v (%v), want error %d", a, a.Err, w.code)
					}
				case InBand:
					var res struct {
						IsError bool `json:"isError"`
						Content []struct {
							Type, Text string
						} `json:"content"`
					}
					if a.Err != nil || json.Unmarshal(a.Result, &res) != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" {
						t.Fatalf("answer %+v, want an isError result", a)
					}
				case AsDetail:
					if a.Detail != "m" || a.Err != nil || a.Result != nil {
						t.Fatalf("answer %+v, want detail", a)
					}
				}
				wantChallenge := ""
				if c == AuthRequired || c == Forbidden {
					wantChallenge = "Bearer c"
				}
				if a.Challenge != wantChallenge {
					t.Fatalf("challenge %q, want %q", a.Challenge, wantChallenge)
				}
				wantRetry := 0
				if (c == LimitExceeded || c == LimitsUnavailable) && w.status != 0 {
					wantRetry = 1 // at least one second, even without a RetryAfter
				}
				if a.RetryAfter != wantRetry {
					t.Fatalf("Retry-After %d, want %d", a.RetryAfter, wantRetry)
				}
			})
		}
	}
}

// Retry-After is whole seconds rounded up, at least 1, sent with a status
// only, and only for the gateway's own limit.
func TestEncodeRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		c     Class
		s     Surface
		after time.Duration
		want  int
	}{
		{LimitExceeded, Modern, 0, 1},
		{LimitExceeded, Modern, time.Millisecond, 1},
		{LimitExceeded, REST, time.Second, 1},
		{LimitExceeded, Legacy, time.Second + time.Millisecond, 2},
		{LimitExceeded, Modern, 30 * time.Second, 30},
		{LimitExceeded, LegacySSE, 30 * time.Second, 0},
		{RateLimited, REST, 30 * time.Second, 0},
	} {
		f := &Fault{Class: tc.c, Message: "limit reached", RetryAfter: tc.after}
		if got := Encode(tc.s, "tools/call", f).RetryAfter; got != tc.want {
			t.Errorf("class %d surface %d after %s: Retry-After %d, want %d", tc.c, tc.s, tc.after, got, tc.want)
		}
	}
}

// A limit's refusal carries LiteLLM's x-ratelimit-* headers for the limit
// that refused it (its value, 0 left, the reset in Retry-After's seconds)
// wherever it has a status; none without a described limit, on the legacy
// SSE stream, or for an upstream's own 429.
func TestEncodeRateLimitHeaders(t *testing.T) {
	rpm := &Limit{Kind: KindRequests, Limit: 5}
	par := &Limit{Kind: KindParallel, Limit: 2}
	for _, tc := range []struct {
		c     Class
		s     Surface
		limit *Limit
		want  [][2]string
	}{
		{LimitExceeded, Modern, rpm, [][2]string{{"x-ratelimit-limit-requests", "5"}, {"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "3"}}},
		{LimitExceeded, REST, rpm, [][2]string{{"x-ratelimit-limit-requests", "5"}, {"x-ratelimit-remaining-requests", "0"}, {"x-ratelimit-reset-requests", "3"}}},
		{LimitExceeded, Legacy, par, [][2]string{{"x-ratelimit-limit-max_parallel_requests", "2"}, {"x-ratelimit-remaining-max_parallel_requests", "0"}, {"x-ratelimit-reset-max_parallel_requests", "3"}}},
		{LimitExceeded, Modern, nil, nil},
		{LimitExceeded, LegacySSE, rpm, nil},
		{RateLimited, REST, rpm, nil},
	} {
		f := &Fault{Class: tc.c, Message: "limit reached", RetryAfter: 2500 * time.Millisecond, Limit: tc.limit}
		if got := Encode(tc.s, "tools/call", f).RateLimit; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("class %d surface %d: %v, want %v", tc.c, tc.s, got, tc.want)
		}
	}
}

// A fault is an error whose text is its message, so a middleware below the
// core can return one.
func TestFaultIsAnError(t *testing.T) {
	var err error = &Fault{Class: LimitExceeded, Message: "limit reached"}
	var f *Fault
	if !errors.As(fmt.Errorf("wrapped: %w", err), &f) || f.Class != LimitExceeded || err.Error() != "limit reached" {
		t.Fatalf("errors.As = %v, %+v", err, f)
	}
}

// In-band answers say what LiteLLM says.
func TestEncodeInBandTexts(t *testing.T) {
	for _, tc := range []struct {
		f    *Fault
		want string
	}{
		{&Fault{Class: UnknownTool, Message: "Unknown tool: a-b", Subject: "a-b"}, `{"content":[{"type":"text","text":"Tool 'a-b' not found"}],"isError":true}`},
		{&Fault{Class: MissingCapability, Message: "client capability required: roots, sampling", Subject: "roots, sampling"},
			`{"content":[{"type":"text","text":"The upstream needs the client capability roots, sampling, which this client did not declare."}],"isError":true}`},
	} {
		if got := string(Encode(Legacy, "tools/call", tc.f).Result); got != tc.want {
			t.Errorf("class %d: %s, want %s", tc.f.Class, got, tc.want)
		}
	}
}

// An upstream's own error reaches legacy callers as sent; modern callers
// see -32002 as -32602 and -32042 as the URLs to open; REST answers 502
// (400 for -32602).
func TestEncodeUpstreamRPC(t *testing.T) {
	urlData := json.RawMessage(`{"elicitations":[{"mode":"url","url":"https://example.com/auth","message":"Sign in"}]}`)
	const urlText = "The server needs the user to complete a step in a browser before this request can proceed; open the URL(s) below, then retry the same request.\nhttps://example.com/auth (Sign in)"
	for _, tc := range []struct {
		name   string
		s      Surface
		method string
		code   int64
		data   json.RawMessage
		status int
		want   int64  // the code answered; 0: an in-band result
		text   string // the in-band text or the error message
	}{
		{"legacy -32002", Legacy, "resources/read", -32002, nil, 200, -32002, "up"},
		{"modern -32002", Modern, "resources/read", -32002, nil, 400, -32602, "up"},
		{"REST -32002", REST, "tools/call", -32002, nil, 502, -32002, "up"},
		{"modern -32601", Modern, "tools/call", -32601, nil, 404, -32601, "up"},
		{"modern -32602", Modern, "tools/call", -32602, nil, 400, -32602, "up"},
		{"REST -32602", REST, "tools/call", -32602, nil, 400, -32602, "up"},
		{"modern other code", Modern, "tools/call", -32099, nil, 200, -32099, "up"},
		{"legacy -32042", Legacy, "tools/call", -32042, urlData, 200, -32042, "up"},
		{"modern -32042 tools/call", Modern, "tools/call", -32042, urlData, 200, 0, urlText},
		{"modern -32042 prompts/get", Modern, "prompts/get", -32042, urlData, 400, -32602, urlText},
		{"modern -32042 completion", Modern, "completion/complete", -32042, urlData, 200, -32042, "up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Encode(tc.s, tc.method, FromRPC(&jsonrpc.Error{Code: tc.code, Message: "up", Data: tc.data}))
			if a.Status != tc.status {
				t.Fatalf("status %d, want %d", a.Status, tc.status)
			}
			if tc.want == 0 {
				if a.Err != nil || string(a.Result) != string(ToolError(tc.text)) {
					t.Fatalf("answer %+v, want in-band %q", a, tc.text)
				}
				return
			}
			if a.Err == nil || a.Err.Code != tc.want || a.Err.Message != tc.text {
				t.Fatalf("answer %+v (%v), want %d %q", a, a.Err, tc.want, tc.text)
			}
		})
	}
}
