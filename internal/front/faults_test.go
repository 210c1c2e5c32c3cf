package front

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/gateway"
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
			if got := maps.Collect(c.All()); !reflect.DeepEqual(got, tc.wantHeader) || c.Bearer != tc.wantBearer {
				t.Fatalf("credentials = %v %q, want %v %q", got, c.Bearer, tc.wantHeader, tc.wantBearer)
			}
			if !reflect.DeepEqual(tc.header, before) {
				t.Fatal("the caller's header was changed")
			}
		})
	}
	// A listing over several servers forwards no Authorization at all.
	c := credentials(http.Header{"Authorization": {"Bearer tok"}, "X-Tenant": {"t"}}, false).WithoutAuthorization()
	if got := maps.Collect(c.All()); !reflect.DeepEqual(got, map[string][]string{"X-Tenant": {"t"}}) || c.Bearer != "" || c.Get("Authorization") != nil {
		t.Fatalf("multi-server credentials = %v %q", got, c.Bearer)
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

// A limit's refusal carries Retry-After wherever the answer has a status;
// other faults send none.
func TestFaultHeadersRetryAfter(t *testing.T) {
	limited := gateway.Failed(&fault.Fault{Class: fault.LimitExceeded, Message: "limit reached", RetryAfter: 2500 * time.Millisecond})
	for _, tc := range []struct {
		s    fault.Surface
		out  gateway.Outcome
		want string
	}{
		{fault.Modern, limited, "3"},
		{fault.REST, limited, "3"},
		{fault.Legacy, limited, "3"},
		{fault.LegacySSE, limited, ""},
		{fault.REST, gateway.Failed(&fault.Fault{Class: fault.RateLimited, Message: "upstream 429", RetryAfter: time.Second}), ""},
	} {
		w := httptest.NewRecorder()
		a := answerOf(tc.s, "tools/call", tc.out)
		setFaultHeaders(w, a)
		if got := w.Header().Get("Retry-After"); got != tc.want {
			t.Errorf("surface %d class %d: Retry-After %q, want %q", tc.s, tc.out.Fault.Class, got, tc.want)
		}
	}
}
