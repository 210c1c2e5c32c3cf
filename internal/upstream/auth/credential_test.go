package auth

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode"
)

// TestStripAuthScheme is the strip_auth_scheme table (LiteLLM's rule), row by
// row, plus edge cases of the separator rule.
func TestStripAuthScheme(t *testing.T) {
	cases := []struct {
		in, scheme, want string
	}{
		{"Bearer abc", "Bearer", "abc"},
		{"bearer abc", "Bearer", "abc"},
		{"Bearer\tabc", "Bearer", "abc"},
		{"bearer\t\tabc", "Bearer", "abc"},
		{" Bearer abc ", "Bearer", "abc "},
		{"abc", "Bearer", "abc"},
		{"Bearerabc", "Bearer", "Bearerabc"},
		{"Basic abc", "Bearer", "Basic abc"},
		{"token abc", "token", "abc"},
		{"Basic abc", "Basic", "abc"},
		{"Bearer ", "Bearer", "Bearer "},
		// edge cases
		{"BEARER \t abc def", "Bearer", "abc def"},
		{"  abc", "Bearer", "abc"},
		{"Bearer", "Bearer", "Bearer"},
		{"Bearer \t", "Bearer", "Bearer \t"},
		{"Bearer.eyJ.sig", "Bearer", "Bearer.eyJ.sig"},
		{"Bearer Bearer x", "Bearer", "Bearer x"},
		{"", "Bearer", ""},
		{"abc", "", "abc"},
		{"\u212Aey abc", "key", "\u212Aey abc"}, // Kelvin sign is not "K"
	}
	for _, tc := range cases {
		if got := StripAuthScheme(tc.in, tc.scheme); got != tc.want {
			t.Errorf("StripAuthScheme(%q, %q) = %q, want %q", tc.in, tc.scheme, got, tc.want)
		}
	}
}

// TestCredentialTable covers each auth_type: the header it fills and the
// value it sends.
func TestCredentialTable(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	cases := []struct {
		authType, value, header, want string
	}{
		// bearer family: exactly one scheme
		{AuthBearerToken, "bare-token", "Authorization", "Bearer bare-token"},
		{AuthBearerToken, "Bearer bare-token", "Authorization", "Bearer bare-token"},
		{AuthBearerToken, "bearer bare-token", "Authorization", "Bearer bare-token"},
		{AuthBearerToken, " BEARER bare-token", "Authorization", "Bearer bare-token"},
		{AuthOAuth2, "bare-token", "Authorization", "Bearer bare-token"},
		{AuthOAuth2, "Bearer bare-token", "Authorization", "Bearer bare-token"},
		{AuthOAuth2TokenExchange, "bare-token", "Authorization", "Bearer bare-token"},
		{AuthOAuth2TokenExchange, "Bearer bare-token", "Authorization", "Bearer bare-token"},
		{AuthOAuthDelegate, "Bearer caller-token", "Authorization", "Bearer caller-token"},
		// token scheme
		{AuthToken, "bare-token", "Authorization", "token bare-token"},
		{AuthToken, "token bare-token", "Authorization", "token bare-token"},
		{AuthToken, "TOKEN bare-token", "Authorization", "token bare-token"},
		// merely starting with the scheme text: left intact
		{AuthBearerToken, "Bearertoken", "Authorization", "Bearer Bearertoken"},
		{AuthOAuth2, "Bearer.eyJzdWIiOiJhYmMifQ.sig", "Authorization", "Bearer Bearer.eyJzdWIiOiJhYmMifQ.sig"},
		{AuthToken, "tokenish", "Authorization", "token tokenish"},
		// scheme with nothing after it: visibly wrong, not missing
		{AuthBearerToken, "Bearer ", "Authorization", "Bearer Bearer"},
		// basic
		{AuthBasic, "user:pass", "Authorization", "Basic " + enc},
		{AuthBasic, "Basic user:pass", "Authorization", "Basic " + enc},
		{AuthBasic, "basic user:pass", "Authorization", "Basic " + enc},
		{AuthBasic, "Basic " + enc, "Authorization", "Basic " + enc},
		{AuthBasic, "basic " + enc, "Authorization", "Basic " + enc},
		{AuthBasic, enc, "Authorization", "Basic " + enc},
		{AuthBasic, "Basic ", "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("Basic"))},
		{AuthBasic, "Basic QmFzaWM=", "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("QmFzaWM="))}, // decodes without ':'
		// verbatim
		{AuthAuthorization, "Bearer Bearer deliberately-doubled", "Authorization", "Bearer Bearer deliberately-doubled"},
		{AuthAPIKey, "api-key", "X-API-Key", "api-key"},
		{AuthAPIKey, "Bearer looks-schemed", "X-API-Key", "Bearer looks-schemed"},
		// case and whitespace of the type name
		{" Bearer_Token ", "x", "Authorization", "Bearer x"},
		// nothing to send
		{AuthNone, "x", "", ""},
		{"", "x", "", ""},
		{AuthBearerToken, "", "", ""},
		{AuthBearerToken, "   ", "", ""},
		{"aws_sigv4", "x", "", ""},
	}
	for _, tc := range cases {
		h, got := Credential(tc.authType, tc.value)
		if h != tc.header || got != tc.want {
			t.Errorf("Credential(%q, %q) = (%q, %q), want (%q, %q)", tc.authType, tc.value, h, got, tc.header, tc.want)
		}
	}
}

// TestBasicAlwaysDecodesToUserPass mirrors test_basic_always_emits_encoded_credentials.
func TestBasicAlwaysDecodesToUserPass(t *testing.T) {
	for _, v := range []string{"user:pass", "Basic user:pass", "basic user:pass", "Basic dXNlcjpwYXNz"} {
		_, got := Credential(AuthBasic, v)
		scheme, cred, ok := strings.Cut(got, " ")
		if !ok || scheme != "Basic" {
			t.Fatalf("%q: got %q", v, got)
		}
		b, err := base64.StdEncoding.DecodeString(cred)
		if err != nil || string(b) != "user:pass" {
			t.Errorf("%q: %q decodes to %q, %v", v, got, b, err)
		}
	}
}

func TestKnownAuthType(t *testing.T) {
	for _, typ := range []string{"", "none", "bearer_token", "oauth2", "oauth2_token_exchange", "oauth_delegate", "token", "basic", "api_key", "authorization", "OAUTH2"} {
		if !KnownAuthType(typ) {
			t.Errorf("KnownAuthType(%q) = false", typ)
		}
	}
	for _, typ := range []string{"aws_sigv4", "bearer", "oauth2_id_jag"} {
		if KnownAuthType(typ) {
			t.Errorf("KnownAuthType(%q) = true", typ)
		}
	}
}

func FuzzStripAuthScheme(f *testing.F) {
	for _, s := range []string{"Bearer abc", " Bearer abc ", "bearer\t\tabc", "Bearer ", "Bearerabc", "token x", "\u212Aey x", ""} {
		f.Add(s, "Bearer")
		f.Add(s, "token")
	}
	f.Fuzz(func(t *testing.T, value, scheme string) {
		got := StripAuthScheme(value, scheme)
		trimmed := strings.TrimLeftFunc(value, unicode.IsSpace)
		if !strings.HasSuffix(trimmed, got) {
			t.Fatalf("StripAuthScheme(%q, %q) = %q, not a suffix of %q", value, scheme, got, trimmed)
		}
		if got != trimmed {
			// Something was stripped: the scheme plus at least one space/tab,
			// and a non-empty credential remains.
			if got == "" || len(trimmed)-len(got) < len(scheme)+1 || scheme == "" {
				t.Fatalf("StripAuthScheme(%q, %q) = %q: bad strip", value, scheme, got)
			}
			if got[0] == ' ' || got[0] == '\t' {
				t.Fatalf("StripAuthScheme(%q, %q) = %q: separator left", value, scheme, got)
			}
		}
		if StripAuthScheme(value, scheme) != got {
			t.Fatal("not deterministic")
		}
	})
}
