package identity

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestCredential(t *testing.T) {
	tests := []struct {
		name     string
		headers  map[string]string
		wantKey  string
		wantAuth bool
	}{
		{"none", nil, "", false},
		{"authorization bearer", map[string]string{"Authorization": "Bearer sk-abc"}, "sk-abc", true},
		{"authorization lower-case scheme", map[string]string{"Authorization": "bearer sk-abc"}, "sk-abc", true},
		{"authorization extra spaces", map[string]string{"Authorization": "  Bearer   sk-abc  "}, "sk-abc", true},
		{"authorization without scheme", map[string]string{"Authorization": "sk-abc"}, "", false},
		{"authorization basic", map[string]string{"Authorization": "Basic dXNlcjpwdw=="}, "", false},
		{"authorization bearer only", map[string]string{"Authorization": "Bearer"}, "", false},
		{"authorization bearer empty", map[string]string{"Authorization": "Bearer   "}, "", false},
		{"authorization bearerish token", map[string]string{"Authorization": "Bearersk-abc"}, "", false},
		{"api key bare", map[string]string{"x-litellm-api-key": "sk-abc"}, "sk-abc", false},
		{"api key with bearer", map[string]string{"x-litellm-api-key": "Bearer sk-abc"}, "sk-abc", false},
		{"api key with BEARER", map[string]string{"X-LiteLLM-API-Key": "BEARER sk-abc"}, "sk-abc", false},
		{"api key spaces", map[string]string{"x-litellm-api-key": "  sk-abc "}, "sk-abc", false},
		{"both: api key wins", map[string]string{"x-litellm-api-key": "sk-gw", "Authorization": "Bearer upstream"}, "sk-gw", false},
		{"both: api key with bearer wins", map[string]string{"x-litellm-api-key": "Bearer sk-gw", "Authorization": "Bearer upstream"}, "sk-gw", false},
		{"empty api key falls back", map[string]string{"x-litellm-api-key": "", "Authorization": "Bearer sk-abc"}, "sk-abc", true},
		{"bearer-only api key falls back", map[string]string{"x-litellm-api-key": "Bearer ", "Authorization": "Bearer sk-abc"}, "sk-abc", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			key, fromAuth := Credential(r)
			if key != tt.wantKey || fromAuth != tt.wantAuth {
				t.Errorf("Credential = (%q, %v), want (%q, %v)", key, fromAuth, tt.wantKey, tt.wantAuth)
			}
		})
	}
}

func TestWebhookHeaders(t *testing.T) {
	h := http.Header{}
	for _, name := range []string{
		"Authorization", "Proxy-Authorization", "X-Litellm-Api-Key", "Cookie", "Mcp-Session-Id",
		"X-Mcp-Auth", "X-Mcp-Github_mcp-Authorization", "X-Api-Key", "Apikey", "X-Amz-Security-Token",
		"X-Client-Secret", "X-Password", "X-Credentials", "X-Hub-Signature", "X-Mcp-Github-X-Tenant",
	} {
		h.Set(name, "secret-value")
	}
	h.Set("Idempotency-Key", "idem-1")
	h.Set("Content-Type", "application/json")
	h.Set("Mcp-Protocol-Version", "2025-11-25")
	h.Set("X-Litellm-End-User-Id", "bob")
	h.Set("X-Mcp-Servers", "github")
	h.Add("Accept", "application/json")
	h.Add("Accept", "text/event-stream")
	got, ok := webhookHeaders(h)
	if !ok {
		t.Fatal("ordinary headers refused")
	}
	want := map[string]string{
		"idempotency-key":       "idem-1",
		"content-type":          "application/json",
		"mcp-protocol-version":  "2025-11-25",
		"x-litellm-end-user-id": "bob",
		"x-mcp-servers":         "github",
		"accept":                "application/json, text/event-stream",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("webhookHeaders = %v\nwant %v", got, want)
	}
}

func TestMetadataGuardrails(t *testing.T) {
	for meta, want := range map[string]string{
		``:                                  "",
		`{}`:                                "",
		`{"guardrails":["a","","b","a",3]}`: "a,b",
		`{"guardrails":{"b":true,"a":true,"c":false}}`:       "a,b",
		`{"guardrails":"a"}`:                                 "",
		`{"guardrails":{"modify_guardrails":true,"a":true}}`: "a",
		`not json`:                            "",
		`{"team":"x","n":1}`:                  "",
		`{"\u0067uardrails":["a"]}`:           "a",
		`{"GuardRails":["a"]}`:                "a", // encoding/json matches names case-insensitively
		`{"guardrail\u017f":["a"]}`:           "a",
		`{"guardrail` + "\u017f" + `":["a"]}`: "a",
	} {
		if got := strings.Join(MetadataGuardrails(json.RawMessage(meta)), ","); got != want {
			t.Errorf("MetadataGuardrails(%s) = %q, want %q", meta, got, want)
		}
	}
}
