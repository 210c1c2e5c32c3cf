package mcp

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestMetaKeys(t *testing.T) {
	tests := []struct {
		key      string
		valid    bool
		reserved bool
	}{
		// Spec §2.3 reservation examples.
		{"io.modelcontextprotocol/protocolVersion", true, true},
		{"dev.mcp/x", true, true},
		{"com.mcp.tools/x", true, true},
		{"org.modelcontextprotocol.api/x", true, true},
		{"com.example.mcp/x", true, false},
		// The protocol's own keys.
		{MetaProtocolVersion, true, true},
		{MetaClientCapabilities, true, true},
		{MetaClientInfo, true, true},
		{MetaLogLevel, true, true},
		{MetaServerInfo, true, true},
		{MetaSubscriptionID, true, true},
		{MetaProgressToken, true, false},
		{MetaTraceParent, true, false},
		// First or third label is not the second.
		{"mcp.example/x", true, false},
		{"modelcontextprotocol.io/x", true, false},
		{"a.b.mcp/x", true, false},
		{"mcp/x", true, false},
		// DNS labels are case-insensitive.
		{"io.MCP/x", true, true},
		{"IO.ModelContextProtocol/x", true, true},
		// Lookalikes are not reserved.
		{"io.mcp-tools/x", true, false},
		{"io.mcpx/x", true, false},
		{"io.modelcontextprotocol2/x", true, false},
		// Valid shapes.
		{"x", true, false},
		{"a1", true, false},
		{"my_key", true, false},
		{"my-key.v2", true, false},
		{"com.example/my_key", true, false},
		{"com.example/", true, false}, // the name may be empty
		{"", true, false},
		{"a-1.b2/n", true, false},
		{"com.ex-ample/a_b.c-d", true, false},
		// Invalid names.
		{"_x", false, false},
		{"x_", false, false},
		{"-x", false, false},
		{"x.", false, false},
		{"a b", false, false},
		{"ключ", false, false},
		{"com.example/_x", false, false},
		{"com.example/x/y", false, false},
		{"io.mcp/x/y", false, true}, // malformed name, but the prefix is still reserved
		// Invalid prefixes.
		{"/x", false, false},
		{"1com.example/x", false, false},
		{"com-.example/x", false, false},
		{"com..example/x", false, false},
		{".com/x", false, false},
		{"com./x", false, false},
		{"co_m/x", false, false},
		{"io.mcp-/x", false, false},
		{"com.exa mple/x", false, false},
		{"io.-mcp/x", false, false},
	}
	for _, tt := range tests {
		if got := ValidMetaKey(tt.key); got != tt.valid {
			t.Errorf("ValidMetaKey(%q) = %v, want %v", tt.key, got, tt.valid)
		}
		if got := ReservedMetaKey(tt.key); got != tt.reserved {
			t.Errorf("ReservedMetaKey(%q) = %v, want %v", tt.key, got, tt.reserved)
		}
	}
}

func TestTraceMetaKey(t *testing.T) {
	for k, want := range map[string]bool{"traceparent": true, "tracestate": true, "baggage": true, "Traceparent": false, "progressToken": false} {
		if got := TraceMetaKey(k); got != want {
			t.Errorf("TraceMetaKey(%q) = %v", k, got)
		}
	}
}

func TestLogLevels(t *testing.T) {
	levels := []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	for i, l := range levels {
		if LogLevelSeverity(l) != i || !ValidLogLevel(l) {
			t.Errorf("level %q: severity %d", l, LogLevelSeverity(l))
		}
	}
	for _, l := range []string{"", "warn", "DEBUG", "fatal"} {
		if ValidLogLevel(l) || LogLevelSeverity(l) != -1 {
			t.Errorf("ValidLogLevel(%q) = true", l)
		}
	}
}

func TestRequestMeta(t *testing.T) {
	tests := []struct {
		name    string
		version string
		caps    json.RawMessage
		info    Implementation
		want    string
		wantErr bool
	}{
		{
			name: "spec discover example", version: V20260728, caps: json.RawMessage(`{}`),
			info: Implementation{Name: "gw", Version: "0.1.0"},
			want: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"0.1.0"}}`,
		},
		{
			name: "nil caps become {} and zero info is omitted", version: V20260728,
			want: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
		},
		{
			name: "caps compacted, info extras kept", version: "2027-01-01",
			caps: json.RawMessage("{ \"elicitation\" : { \"form\" : {} } }\n"),
			info: Implementation{Name: "gw", Version: "1", Title: "Gateway", Extra: map[string]json.RawMessage{"x-vendor": json.RawMessage(`1`)}},
			want: `{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"gw","version":"1","title":"Gateway","x-vendor":1}}`,
		},
		{name: "empty version", version: "", wantErr: true},
		{name: "caps not an object", version: V20260728, caps: json.RawMessage(`[]`), wantErr: true},
		{name: "caps null", version: V20260728, caps: json.RawMessage(`null`), wantErr: true},
		{name: "caps invalid", version: V20260728, caps: json.RawMessage(`{"a":`), wantErr: true},
	}
	for _, tt := range tests {
		got, err := RequestMeta(tt.version, tt.caps, tt.info)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v", tt.name, err)
			continue
		}
		if tt.wantErr {
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON", tt.name)
		}
		f, err := ParseRequestMeta(got)
		if err != nil || f.ProtocolVersion != tt.version {
			t.Errorf("%s: ParseRequestMeta = %+v, %v", tt.name, f, err)
		}
	}
}

func TestParseRequestMeta(t *testing.T) {
	tests := []struct {
		name    string
		meta    string
		want    RequestMetaFields
		wantErr error
	}{
		{
			name: "full",
			meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"warning","progressToken":7,"com.example/x":1}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{"roots":{}}`),
				ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`), LogLevel: "warning", ProgressToken: json.RawMessage(`7`)},
		},
		{
			name: "minimal",
			meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{}`)},
		},
		{name: "absent", meta: ``, wantErr: ErrMetaNotObject},
		{name: "null", meta: `null`, wantErr: ErrMetaNotObject},
		{name: "array", meta: `[]`, wantErr: ErrMetaNotObject},
		{
			name: "missing version", meta: `{"io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ClientCapabilities: json.RawMessage(`{}`)}, wantErr: ErrMetaProtocolVersion,
		},
		{
			name: "numeric version", meta: `{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ClientCapabilities: json.RawMessage(`{}`)}, wantErr: ErrMetaProtocolVersion,
		},
		{
			name: "missing caps", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28"}, wantErr: ErrMetaClientCapabilities,
		},
		{
			name: "null caps", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28"}, wantErr: ErrMetaClientCapabilities,
		},
		{
			name: "both missing reports version first", meta: `{}`, wantErr: ErrMetaProtocolVersion,
		},
		{
			name: "bad log level", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{}`)}, wantErr: ErrMetaLogLevel,
		},
		{
			name: "null log level and token are absent", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":null,"progressToken":null}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{}`)},
		},
	}
	for _, tt := range tests {
		got, err := ParseRequestMeta(json.RawMessage(tt.meta))
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.wantErr)
		}
		if got.ProtocolVersion != tt.want.ProtocolVersion || string(got.ClientCapabilities) != string(tt.want.ClientCapabilities) ||
			string(got.ClientInfo) != string(tt.want.ClientInfo) || got.LogLevel != tt.want.LogLevel ||
			string(got.ProgressToken) != string(tt.want.ProgressToken) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
