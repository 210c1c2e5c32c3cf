package auth

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// values returns every value h holds for name, whatever the key casing.
func values(h http.Header, name string) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	return out
}

func mustPolicy(t *testing.T, cfg PolicyConfig) *Policy {
	t.Helper()
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatalf("NewPolicy: %v", err)
	}
	return p
}

// TestPolicyHeaders covers the header cases: the default slot per type, the
// custom slot (esb-oauth) and the precedence rules with and without it.
func TestPolicyHeaders(t *testing.T) {
	cases := []struct {
		name     string
		cfg      PolicyConfig
		injected http.Header
		token    string
		want     map[string][]string // name → values; nil slice means absent
	}{
		{
			name:  "oauth2 default slot",
			cfg:   PolicyConfig{AuthType: AuthOAuth2},
			token: "tok",
			want:  map[string][]string{"Authorization": {"Bearer tok"}, "X-API-Key": nil},
		},
		{
			name:  "bearer_token default slot",
			cfg:   PolicyConfig{AuthType: AuthBearerToken},
			token: "tok",
			want:  map[string][]string{"Authorization": {"Bearer tok"}},
		},
		{
			name:  "api_key default slot",
			cfg:   PolicyConfig{AuthType: AuthAPIKey},
			token: "tok",
			want:  map[string][]string{"X-API-Key": {"tok"}, "Authorization": nil},
		},
		{
			name:  "oauth2 configured slot",
			cfg:   PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"},
			token: "tok",
			want:  map[string][]string{"esb-oauth": {"Bearer tok"}, "Authorization": nil, "X-API-Key": nil},
		},
		{
			name:  "bearer_token configured slot",
			cfg:   PolicyConfig{AuthType: AuthBearerToken, HeaderName: "esb-oauth"},
			token: "tok",
			want:  map[string][]string{"esb-oauth": {"Bearer tok"}, "Authorization": nil, "X-API-Key": nil},
		},
		{
			name:  "api_key configured slot",
			cfg:   PolicyConfig{AuthType: AuthAPIKey, HeaderName: "esb-oauth"},
			token: "tok",
			want:  map[string][]string{"esb-oauth": {"tok"}, "Authorization": nil, "X-API-Key": nil},
		},
		{
			name: "static Authorization survives next to the slot",
			cfg: PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth",
				StaticHeaders: map[string]string{"Authorization": "Bearer static-upstream-mcp-token"}},
			token: "minted",
			want: map[string][]string{"esb-oauth": {"Bearer minted"},
				"Authorization": {"Bearer static-upstream-mcp-token"}},
		},
		{
			name:     "injected header named like the slot is dropped",
			cfg:      PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"},
			injected: http.Header{"esb-oauth": {"Bearer injected"}, "X-Trace": {"keep"}},
			token:    "minted-token",
			want:     map[string][]string{"esb-oauth": {"Bearer minted-token"}, "X-Trace": {"keep"}},
		},
		{
			name:     "differently cased injected header is dropped",
			cfg:      PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"},
			injected: http.Header{"ESB-OAuth": {"Bearer injected"}, "X-Trace": {"keep"}},
			token:    "minted-token",
			want:     map[string][]string{"esb-oauth": {"Bearer minted-token"}, "X-Trace": {"keep"}},
		},
		{
			name:     "canonical injected header is dropped",
			cfg:      PolicyConfig{AuthType: AuthOAuth2, HeaderName: "ESB-OAuth"},
			injected: http.Header{"Esb-Oauth": {"Bearer injected"}},
			token:    "minted-token",
			want:     map[string][]string{"esb-oauth": {"Bearer minted-token"}},
		},
		{
			name: "static header named like the slot is dropped",
			cfg: PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth",
				StaticHeaders: map[string]string{"ESB-OAUTH": "Bearer static", "X-Trace": "keep"}},
			token: "minted-token",
			want:  map[string][]string{"esb-oauth": {"Bearer minted-token"}, "X-Trace": {"keep"}},
		},
		{
			name:     "injected Authorization passes with a custom slot",
			cfg:      PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"},
			injected: http.Header{"Authorization": {"Bearer caller"}},
			token:    "minted",
			want:     map[string][]string{"esb-oauth": {"Bearer minted"}, "Authorization": {"Bearer caller"}},
		},
		{
			name:     "without a slot injected Authorization overrides the credential",
			cfg:      PolicyConfig{AuthType: AuthOAuth2},
			injected: http.Header{"Authorization": {"Bearer injected"}},
			token:    "minted-token",
			want:     map[string][]string{"Authorization": {"Bearer injected"}},
		},
		{
			name:     "without a slot a lower-case injected authorization overrides too",
			cfg:      PolicyConfig{AuthType: AuthOAuth2},
			injected: http.Header{"authorization": {"Bearer injected"}},
			token:    "minted-token",
			want:     map[string][]string{"Authorization": {"Bearer injected"}},
		},
		{
			name:     "without a slot injected X-API-Key overrides api_key",
			cfg:      PolicyConfig{AuthType: AuthAPIKey, AuthValue: "static"},
			injected: http.Header{"X-Api-Key": {"caller"}},
			want:     map[string][]string{"X-API-Key": {"caller"}},
		},
		{
			name: "static overrides injected and credential",
			cfg: PolicyConfig{AuthType: AuthBearerToken, AuthValue: "cfg",
				StaticHeaders: map[string]string{"Authorization": "Bearer static", "X-Env": "prod"}},
			injected: http.Header{"Authorization": {"Bearer injected"}, "X-Env": {"dev"}},
			want:     map[string][]string{"Authorization": {"Bearer static"}, "X-Env": {"prod"}},
		},
		{
			name: "token auth with extra headers",
			cfg: PolicyConfig{AuthType: AuthToken, AuthValue: "my-token",
				StaticHeaders: map[string]string{"X-Custom-Header": "custom-value"}},
			want: map[string][]string{"Authorization": {"token my-token"}, "X-Custom-Header": {"custom-value"}},
		},
		{
			name: "static headers are trimmed",
			cfg: PolicyConfig{StaticHeaders: map[string]string{
				" X-Pad ": "v", "X-Db-Url": " mew://host "}},
			want: map[string][]string{"X-Pad": {"v"}, "X-Db-Url": {"mew://host"}},
		},
		{
			name:     "injected values are trimmed of OWS",
			cfg:      PolicyConfig{},
			injected: http.Header{"X-Trace": {" a\t", "b "}},
			want:     map[string][]string{"X-Trace": {"a", "b"}},
		},
		{
			name:  "static auth_value when no token",
			cfg:   PolicyConfig{AuthType: AuthBasic, AuthValue: "user:pass"},
			want:  map[string][]string{"Authorization": {"Basic dXNlcjpwYXNz"}},
			token: "",
		},
		{
			name:  "per-request token beats auth_value",
			cfg:   PolicyConfig{AuthType: AuthBearerToken, AuthValue: "cfg"},
			token: "Bearer caller",
			want:  map[string][]string{"Authorization": {"Bearer caller"}},
		},
		{
			name:  "oauth_delegate forwards the caller token as bearer",
			cfg:   PolicyConfig{AuthType: AuthOAuthDelegate},
			token: "bearer caller-tok",
			want:  map[string][]string{"Authorization": {"Bearer caller-tok"}},
		},
		{
			name:  "none ignores a token",
			cfg:   PolicyConfig{AuthType: AuthNone, AuthValue: "x"},
			token: "tok",
			want:  map[string][]string{"Authorization": nil, "X-API-Key": nil},
		},
		{
			name: "no credential, no header",
			cfg:  PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"},
			want: map[string][]string{"esb-oauth": nil, "Authorization": nil},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPolicy(t, tc.cfg)
			dst := http.Header{}
			p.Apply(dst, tc.injected, tc.token)
			for name, want := range tc.want {
				if got := values(dst, name); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %q, want %q (all: %v)", name, got, want, dst)
				}
			}
		})
	}
}

func TestPolicyApplyDoesNotAliasInjected(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{})
	injected := http.Header{"X-Trace": {"a"}}
	dst := http.Header{}
	p.Apply(dst, injected, "")
	dst["X-Trace"][0] = "changed"
	if injected["X-Trace"][0] != "a" {
		t.Fatal("Apply aliased the injected slice")
	}
}

func TestPolicyAccessors(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{AuthType: AuthOAuth2, HeaderName: " esb-oauth "})
	if p.CredentialHeader() != "Esb-Oauth" || p.CustomSlot() != "Esb-Oauth" || p.HasStaticCredential() {
		t.Fatalf("got %q %q %v", p.CredentialHeader(), p.CustomSlot(), p.HasStaticCredential())
	}
	p = mustPolicy(t, PolicyConfig{AuthType: AuthAPIKey, AuthValue: "k"})
	if p.CredentialHeader() != "X-Api-Key" || p.CustomSlot() != "" || !p.HasStaticCredential() {
		t.Fatalf("got %q %q %v", p.CredentialHeader(), p.CustomSlot(), p.HasStaticCredential())
	}
	p = mustPolicy(t, PolicyConfig{})
	if p.CredentialHeader() != "" {
		t.Fatalf("none: %q", p.CredentialHeader())
	}
}

func TestNewPolicyErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  PolicyConfig
	}{
		{"unknown type", PolicyConfig{AuthType: "aws_sigv4"}},
		{"slot without credential", PolicyConfig{AuthType: AuthNone, HeaderName: "esb-oauth"}},
		{"bad slot name", PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb oauth"}},
		{"bad static name", PolicyConfig{StaticHeaders: map[string]string{"X:Y": "v"}}},
		{"empty static name", PolicyConfig{StaticHeaders: map[string]string{"  ": "v"}}},
		{"CRLF in static value", PolicyConfig{StaticHeaders: map[string]string{"X-A": "v\r\nX-Evil: s3cr3t"}}},
		{"CRLF in auth_value", PolicyConfig{AuthType: AuthBearerToken, AuthValue: "s3cr3t\r\nX-Evil: 1"}},
		{"duplicate after trim", PolicyConfig{StaticHeaders: map[string]string{" X-Pad": "a", "x-pad ": "b"}}},
	}
	for _, tc := range cases {
		_, err := NewPolicy(tc.cfg)
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%s: err = %v, want ErrInvalidPolicy", tc.name, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: error echoes a value: %v", tc.name, err)
		}
	}
}

func TestStripCredentials(t *testing.T) {
	p := mustPolicy(t, PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth"})
	h := http.Header{
		"Authorization": {"a"}, "x-api-key": {"b"}, "Esb-Oauth": {"c"}, "esb-oauth": {"d"},
		"X-Trace": {"keep"},
	}
	p.StripCredentials(h)
	if len(h) != 1 || h.Get("X-Trace") != "keep" {
		t.Fatalf("left %v", h)
	}
}

func BenchmarkPolicyApply(b *testing.B) {
	p, err := NewPolicy(PolicyConfig{AuthType: AuthOAuth2, HeaderName: "esb-oauth",
		StaticHeaders: map[string]string{"X-Env": "prod", "X-Team": "a"}})
	if err != nil {
		b.Fatal(err)
	}
	injected := http.Header{"X-Trace": {"t"}, "Esb-Oauth": {"nope"}}
	b.ReportAllocs()
	for b.Loop() {
		dst := make(http.Header, 8)
		p.Apply(dst, injected, "minted-token")
	}
}
