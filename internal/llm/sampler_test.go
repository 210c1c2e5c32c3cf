package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testKey    = "sk-test-KEY-0123456789"
	testPrompt = "PROMPT-sample prompt"
	bodySecret = "BODY-SECRET-must-not-leak"
)

// recorded is one request the fake provider received.
type recorded struct {
	method, path, auth, contentType string
	hasAuth                         bool
	body                            []byte
}

// fakeProvider is an httptest OpenAI-compatible provider that records every request.
type fakeProvider struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	respond func(w http.ResponseWriter, r *http.Request, body []byte)
}

func newFakeProvider(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeProvider {
	t.Helper()
	f := &fakeProvider{respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, hasAuth := r.Header["Authorization"]
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), hasAuth, body})
		f.mu.Unlock()
		f.respond(w, r, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProvider) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// sampler builds a Sampler whose single model "sampling-model" points at f.
func (f *fakeProvider) sampler(t *testing.T, mutate func(*Config)) *Sampler {
	t.Helper()
	cfg := Config{
		Models: []Model{{
			Name:     "sampling-model",
			Provider: "openai/sampling-model-id",
			APIBase:  f.srv.URL + "/v1",
			APIKey:   testKey,
		}},
		Default:    "sampling-model",
		HTTPClient: f.srv.Client(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reply(status int, body string) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const okAnswer = `{"id":"x","object":"chat.completion","model":"sampling-model-id-2024","choices":[{"index":0,"message":{"role":"assistant","content":"sampled response"},"finish_reason":"stop"}]}`

func simpleParams(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": text}}},
		"maxTokens": 8,
	})
	return b
}

func TestCreateMessageRequestJSON(t *testing.T) {
	f := newFakeProvider(t, reply(200, okAnswer))
	s := f.sampler(t, nil)
	params := `{
		"messages": [
			{"role": "user", "content": {"type": "text", "text": "sample prompt"}},
			{"role": "assistant", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
			{"role": "user", "content": [{"type": "text", "text": "what is this?"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}
		],
		"modelPreferences": {"hints": [{"name": "nothing-matches"}], "costPriority": 0.9},
		"systemPrompt": "be brief",
		"includeContext": "thisServer",
		"temperature": 0.25,
		"maxTokens": 8,
		"stopSequences": ["\n\n", "END"],
		"metadata": {"k": "v"},
		"_meta": {"progressToken": 1}
	}`
	out, err := s.CreateMessage(t.Context(), json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("provider got %d requests, want exactly 1", len(reqs))
	}
	r := reqs[0]
	if r.method != http.MethodPost || r.path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.method, r.path)
	}
	if r.auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", r.auth)
	}
	if r.contentType != "application/json" {
		t.Errorf("Content-Type = %q", r.contentType)
	}
	want := `{"model":"sampling-model-id","messages":[` +
		`{"role":"system","content":"be brief"},` +
		`{"role":"user","content":"sample prompt"},` +
		`{"role":"assistant","content":"part one\npart two"},` +
		`{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}` +
		`],"max_tokens":8,"temperature":0.25,"stop":["\n\n","END"]}`
	if string(r.body) != want {
		t.Errorf("request body\n got %s\nwant %s", r.body, want)
	}
	wantOut := `{"role":"assistant","content":{"type":"text","text":"sampled response"},"model":"sampling-model-id-2024","stopReason":"endTurn"}`
	if string(out) != wantOut {
		t.Errorf("result\n got %s\nwant %s", out, wantOut)
	}
}

func TestCreateMessageMinimalRequest(t *testing.T) {
	f := newFakeProvider(t, reply(200, okAnswer))
	s := f.sampler(t, func(c *Config) {
		c.Models[0].APIKey = ""
		c.Models[0].Provider = "plain-model" // no slash: sent whole
		c.Models[0].APIBase = f.srv.URL + "/v1/"
	})
	if _, err := s.CreateMessage(t.Context(), simpleParams("hello")); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("provider got %d requests, want 1", len(reqs))
	}
	if reqs[0].hasAuth {
		t.Errorf("Authorization sent without an api_key: %q", reqs[0].auth)
	}
	if reqs[0].path != "/v1/chat/completions" {
		t.Errorf("path = %q", reqs[0].path)
	}
	want := `{"model":"plain-model","messages":[{"role":"user","content":"hello"}],"max_tokens":8}`
	if string(reqs[0].body) != want {
		t.Errorf("request body\n got %s\nwant %s", reqs[0].body, want)
	}
}

func TestCreateMessageHintChoosesModel(t *testing.T) {
	f := newFakeProvider(t, reply(200, `{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
	s := f.sampler(t, func(c *Config) {
		c.Models = append(c.Models, Model{Name: "fast-Haiku", Provider: "openai/haiku-id", APIBase: f.srv.URL + "/alt"})
	})
	params := `{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":3,"modelPreferences":{"hints":[{"name":"haiku"}]}}`
	out, err := s.CreateMessage(t.Context(), json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].path != "/alt/chat/completions" || !strings.Contains(string(reqs[0].body), `"model":"haiku-id"`) {
		t.Fatalf("requests = %+v", reqs)
	}
	if reqs[0].hasAuth {
		t.Errorf("the hinted model has no key, but Authorization was sent")
	}
	// The provider named no model: the result names ours.
	if !strings.Contains(string(out), `"model":"fast-Haiku"`) {
		t.Errorf("result = %s", out)
	}
}

func TestResultMapping(t *testing.T) {
	tests := []struct {
		name, answer, want string
	}{
		{"stop → endTurn", `{"model":"p","choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"a"},"model":"p","stopReason":"endTurn"}`},
		{"length → maxTokens", `{"model":"p","choices":[{"message":{"content":"a"},"finish_reason":"length"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"a"},"model":"p","stopReason":"maxTokens"}`},
		{"other as is", `{"model":"p","choices":[{"message":{"content":"a"},"finish_reason":"content_filter"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"a"},"model":"p","stopReason":"content_filter"}`},
		{"null finish_reason → none", `{"model":"p","choices":[{"message":{"content":"a"},"finish_reason":null}]}`,
			`{"role":"assistant","content":{"type":"text","text":"a"},"model":"p"}`},
		{"no model → ours", `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"a"},"model":"sampling-model","stopReason":"endTurn"}`},
		{"empty text kept", `{"model":"p","choices":[{"message":{"content":""},"finish_reason":"stop"}]}`,
			`{"role":"assistant","content":{"type":"text","text":""},"model":"p","stopReason":"endTurn"}`},
		{"content parts concatenated", `{"model":"p","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"ab"},"model":"p","stopReason":"endTurn"}`},
		{"first choice only", `{"model":"p","choices":[{"message":{"content":"one"},"finish_reason":"stop"},{"message":{"content":"two"}}]}`,
			`{"role":"assistant","content":{"type":"text","text":"one"},"model":"p","stopReason":"endTurn"}`},
		{"unicode and escapes", `{"model":"p","choices":[{"message":{"content":"h\u00e9 \"q\" <b>"},"finish_reason":"stop"}]}`,
			`{"role":"assistant","content":{"type":"text","text":"hé \"q\" \u003cb\u003e"},"model":"p","stopReason":"endTurn"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProvider(t, reply(200, tt.answer))
			out, err := f.sampler(t, nil).CreateMessage(t.Context(), simpleParams("x"))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want {
				t.Errorf("result\n got %s\nwant %s", out, tt.want)
			}
		})
	}
}

// checkClean fails if err's text carries the key, the prompt or the provider's body.
func checkClean(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{testKey, testPrompt, bodySecret, "sk-"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q leaks %q", err, s)
		}
	}
}

func TestProviderErrors(t *testing.T) {
	big := `{"choices":[{"message":{"content":"` + strings.Repeat("a", MaxResponseBytes) + `"}}]}`
	tests := []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request, []byte)
		want    string
	}{
		{"500", reply(500, `{"error":{"message":"`+bodySecret+` `+testPrompt+`"}}`), "sampling provider answered HTTP 500"},
		{"429", reply(429, `{"error":"`+bodySecret+`"}`), "sampling provider answered HTTP 429"},
		{"401 echoing the key", reply(401, `{"error":"bad key `+testKey+`"}`), "sampling provider answered HTTP 401"},
		{"garbage", reply(200, `<html>`+bodySecret+`</html>`), "sampling provider returned an invalid response"},
		{"wrong JSON type", reply(200, `{"choices":"`+bodySecret+`"}`), "sampling provider returned an invalid response"},
		{"no choices", reply(200, `{"model":"p","choices":[]}`), "sampling provider returned no choices"},
		{"choices absent", reply(200, `{"error":{"message":"`+bodySecret+`"}}`), "sampling provider returned no choices"},
		{"null content", reply(200, `{"choices":[{"message":{"content":null,"refusal":"`+bodySecret+`"},"finish_reason":"stop"}]}`), "sampling provider returned no text content"},
		{"too large", reply(200, big), fmt.Sprintf("sampling provider response exceeds %d MiB", MaxResponseBytes>>20)},
		{"connection cut", func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, "sampling provider request failed: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeProvider(t, tt.respond)
			_, err := f.sampler(t, nil).CreateMessage(t.Context(), simpleParams(testPrompt))
			if err == nil {
				t.Fatal("CreateMessage succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want prefix %q", err, tt.want)
			}
			if !errors.Is(err, ErrProvider) {
				t.Errorf("err %v is not ErrProvider", err)
			}
			checkClean(t, err)
			if n := len(f.requests()); n != 1 {
				t.Errorf("provider got %d requests, want exactly 1 (no retries)", n)
			}
		})
	}
}

func TestProviderTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	s := f.sampler(t, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	start := time.Now()
	_, err := s.CreateMessage(t.Context(), simpleParams(testPrompt))
	if err == nil {
		t.Fatal("CreateMessage succeeded")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
	if err.Error() != "sampling provider timed out after 50ms" {
		t.Errorf("err = %q", err)
	}
	if !errors.Is(err, ErrProvider) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v should be ErrProvider and DeadlineExceeded", err)
	}
	checkClean(t, err)
	if n := len(f.requests()); n != 1 {
		t.Errorf("provider got %d requests, want 1", n)
	}
}

func TestTimeoutDuringBody(t *testing.T) {
	release := make(chan struct{})
	f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"choices":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	s := f.sampler(t, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	_, err := s.CreateMessage(t.Context(), simpleParams(testPrompt))
	if err == nil || err.Error() != "sampling provider timed out after 50ms" {
		t.Fatalf("err = %v", err)
	}
}

func TestHTTPClientTimeout(t *testing.T) {
	for _, midBody := range []bool{false, true} {
		t.Run(fmt.Sprint("midBody=", midBody), func(t *testing.T) {
			release := make(chan struct{})
			f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
				if midBody {
					w.WriteHeader(200)
					_, _ = io.WriteString(w, `{"choices":[`)
					w.(http.Flusher).Flush()
				}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			defer close(release)
			client := f.srv.Client()
			client.Timeout = 50 * time.Millisecond
			s := f.sampler(t, func(c *Config) { c.HTTPClient = client })
			_, err := s.CreateMessage(t.Context(), simpleParams(testPrompt))
			if err == nil || err.Error() != "sampling provider timed out" || !errors.Is(err, ErrProvider) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		DefaultTimeout:          "60s",
		90 * time.Second:        "90s",
		1500 * time.Millisecond: "1.5s",
		50 * time.Millisecond:   "50ms",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.timeout != DefaultTimeout {
		t.Errorf("default timeout = %v", s.timeout)
	}
}

func TestCallerCancellation(t *testing.T) {
	started := make(chan struct{})
	f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		close(started)
		<-r.Context().Done()
	})
	s := f.sampler(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := s.CreateMessage(ctx, simpleParams(testPrompt))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrProvider) {
		t.Fatalf("err = %v, want context.Canceled and not ErrProvider", err)
	}
	if err.Error() != "sampling canceled: context canceled" {
		t.Errorf("err = %q", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := New(Config{
		Models:     []Model{{Name: "m", Provider: "openai/x", APIBase: "http://" + addr + "/v1", APIKey: testKey}},
		HTTPClient: &http.Client{Transport: &http.Transport{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateMessage(t.Context(), simpleParams(testPrompt))
	if err == nil || !strings.HasPrefix(err.Error(), "sampling provider request failed: ") || !errors.Is(err, ErrProvider) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "/v1") {
		t.Errorf("err repeats the URL: %q", err)
	}
	checkClean(t, err)
}

func TestUnusableModel(t *testing.T) {
	f := newFakeProvider(t, reply(200, okAnswer))
	s := f.sampler(t, func(c *Config) {
		c.Models = append(c.Models, Model{Name: "claude", Provider: "anthropic/claude-x", APIKey: testKey})
	})
	params := `{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":3,"modelPreferences":{"hints":[{"name":"claude"}]}}`
	_, err := s.CreateMessage(t.Context(), json.RawMessage(params))
	if !errors.Is(err, ErrProvider) || !strings.Contains(err.Error(), `sampling model "claude" cannot be called`) {
		t.Fatalf("err = %v", err)
	}
	checkClean(t, err)
	if n := len(f.requests()); n != 0 {
		t.Errorf("provider got %d requests, want 0", n)
	}
}

func TestInvalidRequestsMakeNoCall(t *testing.T) {
	user := func(content string) string { return `{"role":"user","content":` + content + `}` }
	msgs := func(m ...string) string { return `"messages":[` + strings.Join(m, ",") + `]` }
	text := `{"type":"text","text":"` + testPrompt + `"}`
	tests := []struct {
		name, params string
		kind         error
		want         string
	}{
		{"not an object", `[1]`, ErrInvalidRequest, "invalid sampling request: params must be a JSON object"},
		{"empty", ``, ErrInvalidRequest, "invalid sampling request: params must be a JSON object"},
		{"broken JSON", `{"messages":`, ErrInvalidRequest, "invalid sampling request: params are not valid JSON"},
		{"messages wrong type", `{"messages":"` + testPrompt + `","maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages has the wrong type"},
		{"no messages", `{"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages must not be empty"},
		{"empty messages", `{"messages":[],"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages must not be empty"},
		{"maxTokens missing", `{` + msgs(user(text)) + `}`, ErrInvalidRequest, "invalid sampling request: maxTokens is required"},
		{"maxTokens null", `{` + msgs(user(text)) + `,"maxTokens":null}`, ErrInvalidRequest, "invalid sampling request: maxTokens is required"},
		{"maxTokens zero", `{` + msgs(user(text)) + `,"maxTokens":0}`, ErrInvalidRequest, "invalid sampling request: maxTokens must be a positive integer"},
		{"maxTokens negative", `{` + msgs(user(text)) + `,"maxTokens":-5}`, ErrInvalidRequest, "invalid sampling request: maxTokens must be a positive integer"},
		{"maxTokens fraction", `{` + msgs(user(text)) + `,"maxTokens":1.5}`, ErrInvalidRequest, "invalid sampling request: maxTokens must be a positive integer"},
		{"maxTokens string", `{` + msgs(user(text)) + `,"maxTokens":"8"}`, ErrInvalidRequest, "invalid sampling request: maxTokens must be a positive integer"},
		{"maxTokens huge", `{` + msgs(user(text)) + `,"maxTokens":1e300}`, ErrInvalidRequest, "invalid sampling request: maxTokens must be a positive integer"},
		{"bad role", `{"messages":[{"role":"system","content":` + text + `}],"maxTokens":8}`, ErrInvalidRequest, `invalid sampling request: messages[0].role must be "user" or "assistant"`},
		{"no content", `{"messages":[{"role":"user"}],"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content is required"},
		{"string content", `{` + msgs(user(`"`+testPrompt+`"`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content is required"},
		{"malformed block", `{` + msgs(user(`{"type":5}`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content is not a valid content block"},
		{"malformed block array", `{` + msgs(user(`[{"type":5}]`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content is not a valid content block array"},
		{"empty content array", `{` + msgs(user(`[]`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content is empty"},
		{"text without text", `{` + msgs(user(`{"type":"text"}`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content has no text"},
		{"block without type", `{` + msgs(user(`[`+text+`,{"text":"x"}]`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content[1] has no type"},
		{"image without mimeType", `{` + msgs(user(`{"type":"image","data":"AAAA"}`)) + `,"maxTokens":8}`, ErrInvalidRequest, "invalid sampling request: messages[0].content needs data and mimeType"},
		{"audio", `{` + msgs(user(`{"type":"audio","data":"AAAA","mimeType":"audio/wav"}`)) + `,"maxTokens":8}`, ErrUnsupported, "audio content is not supported for sampling"},
		{"audio in array, later message", `{` + msgs(user(text), user(`[`+text+`,{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]`)) + `,"maxTokens":8}`, ErrUnsupported, "audio content is not supported for sampling"},
		{"image from assistant", `{"messages":[{"role":"assistant","content":{"type":"image","data":"AAAA","mimeType":"image/png"}}],"maxTokens":8}`, ErrUnsupported, "image content is only supported in user messages for sampling"},
		{"tool_use content", `{` + msgs(user(`{"type":"tool_use","id":"1","name":"t","input":{}}`)) + `,"maxTokens":8}`, ErrUnsupported, `"tool_use" content is not supported for sampling`},
		{"tools", `{` + msgs(user(text)) + `,"maxTokens":8,"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`, ErrUnsupported, "sampling with tools is not supported"},
	}
	f := newFakeProvider(t, reply(200, okAnswer))
	s := f.sampler(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CreateMessage(t.Context(), json.RawMessage(tt.params))
			if err == nil {
				t.Fatal("CreateMessage succeeded")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want prefix %q", err, tt.want)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("err %v is not %v", err, tt.kind)
			}
			checkClean(t, err)
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("provider got %d requests, want 0", n)
	}
}

func TestAcceptedEdgeParams(t *testing.T) {
	f := newFakeProvider(t, reply(200, okAnswer))
	s := f.sampler(t, nil)
	for _, p := range []string{
		`{"messages":[{"role":"user","content":{"type":"text","text":""}}],"maxTokens":8.0}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":8,"tools":[],"modelPreferences":null,"stopSequences":[]}`,
		` {"messages":[{"role":"user","content":{"type":"text","text":"x"}}],"maxTokens":1e2,"tools":null}`,
	} {
		if _, err := s.CreateMessage(t.Context(), json.RawMessage(p)); err != nil {
			t.Errorf("CreateMessage(%s): %v", p, err)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests", len(reqs))
	}
	for i, want := range []string{
		`{"model":"sampling-model-id","messages":[{"role":"user","content":""}],"max_tokens":8}`,
		`{"model":"sampling-model-id","messages":[{"role":"user","content":"x"}],"max_tokens":8}`,
		`{"model":"sampling-model-id","messages":[{"role":"user","content":"x"}],"max_tokens":100}`,
	} {
		if string(reqs[i].body) != want {
			t.Errorf("request %d\n got %s\nwant %s", i, reqs[i].body, want)
		}
	}
}

func TestLogsCarryNoContent(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if bytes.Contains(body, []byte("fail")) {
			reply(500, bodySecret)(w, r, body)
			return
		}
		reply(200, `{"choices":[{"message":{"content":"ANSWER-`+bodySecret+`"},"finish_reason":"stop"}]}`)(w, r, body)
	})
	s := f.sampler(t, func(c *Config) { c.Logger = logger })
	if _, err := s.CreateMessage(t.Context(), simpleParams(testPrompt)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateMessage(t.Context(), simpleParams(testPrompt+" fail")); err == nil {
		t.Fatal("expected failure")
	}
	mu.Lock()
	logs := buf.String()
	mu.Unlock()
	for _, s := range []string{testKey, testPrompt, bodySecret} {
		if strings.Contains(logs, s) {
			t.Errorf("logs leak %q:\n%s", s, logs)
		}
	}
	if !strings.Contains(logs, "model=sampling-model") || !strings.Contains(logs, "status=500") {
		t.Errorf("logs lack model/status:\n%s", logs)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestConcurrentCreateMessage(t *testing.T) {
	// The fake echoes the last user message, so crossed wires would show.
	f := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			w.WriteHeader(400)
			return
		}
		out, _ := json.Marshal(map[string]any{
			"model":   "p",
			"choices": []any{map[string]any{"message": map[string]any{"content": "echo " + req.Messages[len(req.Messages)-1].Content}, "finish_reason": "stop"}},
		})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
	s := f.sampler(t, nil)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("prompt-%d", i)
			out, err := s.CreateMessage(t.Context(), simpleParams(msg))
			if err != nil {
				errs <- err
				return
			}
			var res struct {
				Content struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				errs <- err
				return
			}
			if res.Content.Text != "echo "+msg {
				errs <- fmt.Errorf("call %d got %q", i, res.Content.Text)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(f.requests()); got != n {
		t.Errorf("provider got %d requests, want %d", got, n)
	}
}
