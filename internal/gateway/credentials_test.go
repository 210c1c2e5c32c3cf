package gateway

import (
	"maps"
	"net/http"
	"reflect"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// Credentials share the caller's header yet never show the gateway's own
// credential: x-litellm-api-key always, Authorization when it carried the
// key or the credentials are for several servers; a clone keeps its own
// headers.
func TestCredentialsHideTheGatewayKey(t *testing.T) {
	if headerAPIKey != http.CanonicalHeaderKey(identity.HeaderAPIKey) {
		t.Fatalf("headerAPIKey %q is not identity.HeaderAPIKey", headerAPIKey)
	}
	h := http.Header{"X-Litellm-Api-Key": {"sk-1"}, "Authorization": {"Bearer tok"}, "X-Mcp-Auth": {"legacy"}, "X-Tenant": {"t"}}
	for _, c := range []struct {
		name      string
		creds     Credentials
		want      map[string][]string
		wantAuth  bool
		wantBearr string
	}{
		{"key in x-litellm-api-key", NewCredentials(h, false, "tok"), map[string][]string{"Authorization": {"Bearer tok"}, "X-Mcp-Auth": {"legacy"}, "X-Tenant": {"t"}}, true, "tok"},
		{"key in Authorization", NewCredentials(h, true, ""), map[string][]string{"X-Mcp-Auth": {"legacy"}, "X-Tenant": {"t"}}, false, ""},
		{"several servers", NewCredentials(h, false, "tok").WithoutAuthorization(), map[string][]string{"X-Tenant": {"t"}}, false, ""},
	} {
		if got := maps.Collect(c.creds.All()); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: All = %v, want %v", c.name, got, c.want)
		}
		if c.creds.Get("X-Mcp-Auth") != nil != (c.name != "several servers") {
			t.Errorf("%s: x-mcp-auth = %v", c.name, c.creds.Get("X-Mcp-Auth"))
		}
		if c.creds.Get("X-Litellm-Api-Key") != nil || (c.creds.Get("Authorization") != nil) != c.wantAuth || c.creds.Bearer != c.wantBearr {
			t.Errorf("%s: Get shows the key, or Authorization %v (want %v), bearer %q", c.name, c.creds.Get("Authorization"), c.wantAuth, c.creds.Bearer)
		}
	}
	orig := NewCredentials(http.Header{"X-Tenant": {"t"}, "X-Litellm-Api-Key": {"sk-1"}}, false, "")
	clone := orig.Clone()
	if _, ok := clone.header["X-Litellm-Api-Key"]; ok {
		t.Errorf("the clone holds the gateway key")
	}
	orig.header["X-Tenant"][0] = "changed"
	if got := clone.Get("X-Tenant"); len(got) != 1 || got[0] != "t" {
		t.Errorf("the clone follows its original: %v", got)
	}
}
