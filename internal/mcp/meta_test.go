package mcp

import (
	"encoding/json"
	"errors"
	"testing"
)

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
			name: "escaped key, duplicate key: the last counts", meta: `{"io.modelcontextprotocol\/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{}`)},
		},
		{
			name: "escaped version value", meta: ` {"io.modelcontextprotocol/protocolVersion":"2026-07-\u00328","io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ProtocolVersion: "2026-07-28", ClientCapabilities: json.RawMessage(`{}`)},
		},
		{
			name: "empty version", meta: `{"io.modelcontextprotocol/protocolVersion":"","io.modelcontextprotocol/clientCapabilities":{}}`,
			want: RequestMetaFields{ClientCapabilities: json.RawMessage(`{}`)}, wantErr: ErrMetaProtocolVersion,
		},
		{
			name: "numeric log level", meta: `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":3}`,
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
