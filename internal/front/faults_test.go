package front

import (
	"net/http"
	"reflect"
	"testing"
)

// The gateway's own credential never reaches the core's Credentials; the
// caller's bearer token does only when it is not the gateway key.
func TestCredentialsStripTheGatewayKey(t *testing.T) {
	for _, tc := range []struct {
		name       string
		header     http.Header
		keyInAuth  bool
		wantHeader map[string][]string
		wantBearer string
	}{
		{"key in x-litellm-api-key", http.Header{"X-Litellm-Api-Key": {"sk-1"}, "Authorization": {"Bearer tok"}, "X-Tenant": {"t"}}, false,
			map[string][]string{"Authorization": {"Bearer tok"}, "X-Tenant": {"t"}}, "tok"},
		{"key in Authorization", http.Header{"Authorization": {"Bearer sk-1"}, "X-Tenant": {"t"}}, true,
			map[string][]string{"X-Tenant": {"t"}}, ""},
		{"not a bearer token", http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}}, false,
			map[string][]string{"Authorization": {"Basic dXNlcjpwYXNz"}}, ""},
		{"bearer with spaces", http.Header{"Authorization": {"Bearer  tok "}}, false,
			map[string][]string{"Authorization": {"Bearer  tok "}}, "tok"},
		{"no credential", http.Header{"X-Tenant": {"t"}}, false, map[string][]string{"X-Tenant": {"t"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.header.Clone()
			c := credentials(tc.header, tc.keyInAuth)
			if !reflect.DeepEqual(c.Header, tc.wantHeader) || c.Bearer != tc.wantBearer {
				t.Fatalf("credentials = %v %q, want %v %q", c.Header, c.Bearer, tc.wantHeader, tc.wantBearer)
			}
			if !reflect.DeepEqual(tc.header, before) {
				t.Fatal("the caller's header was changed")
			}
		})
	}
	// A listing over several servers forwards no Authorization at all.
	c := withoutAuthorization(credentials(http.Header{"Authorization": {"Bearer tok"}, "X-Tenant": {"t"}}, false))
	if !reflect.DeepEqual(c.Header, map[string][]string{"X-Tenant": {"t"}}) || c.Bearer != "" {
		t.Fatalf("multi-server credentials = %v %q", c.Header, c.Bearer)
	}
}

func TestParamHeadersPicksMcpParam(t *testing.T) {
	h := http.Header{"Mcp-Param-Region": {"eu"}, "Mcp-Method": {"tools/call"}, "X-Tenant": {"t"}, "Mcp-Param-": {"x"}}
	if got := paramHeaders(h); !reflect.DeepEqual(got, map[string][]string{"Mcp-Param-Region": {"eu"}}) {
		t.Fatalf("paramHeaders = %v", got)
	}
	if got := paramHeaders(http.Header{"X-Tenant": {"t"}}); got != nil {
		t.Fatalf("paramHeaders without any = %v", got)
	}
}
