package e2e

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// rawAs sends method url with key (none when "") without following redirects and returns
// the status and body.
func rawAs(t *testing.T, method, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestUpstreamAuthorizationVaultVisibility: a key may start the per-user authorization and
// delete its token only for a server its permissions let it use; for any other server the
// answer is the unknown server's, byte for byte, and a caller without a key is refused
// before the server is looked at, so neither learns which servers exist.
func TestUpstreamAuthorizationVaultVisibility(t *testing.T) {
	gw, _, _, _ := vaultGateway(t, time.Hour)
	alice := generateKey(t, gw.url, `{"user_id":"alice"}`)
	carol := generateKey(t, gw.url, `{"user_id":"bob","object_permission":{"mcp_servers":["no-mcp-servers"]}}`)

	if status, body := rawAs(t, http.MethodGet, gw.url+"/gh/authorize", alice); status != http.StatusFound {
		t.Fatalf("a key allowed gh: GET /gh/authorize = %d %s, want 302", status, body)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/authorize"},
		{http.MethodDelete, "/token"},
	} {
		hidden, hiddenBody := rawAs(t, c.method, gw.url+"/gh"+c.path, carol)
		unknown, unknownBody := rawAs(t, c.method, gw.url+"/nosuch"+c.path, carol)
		if hidden != http.StatusNotFound || hidden != unknown || hiddenBody != unknownBody {
			t.Fatalf("%s gh%s by a key not allowed gh = %d %q; an unknown server = %d %q; want the same 404",
				c.method, c.path, hidden, hiddenBody, unknown, unknownBody)
		}
		anon, _ := rawAs(t, c.method, gw.url+"/gh"+c.path, "")
		anonUnknown, _ := rawAs(t, c.method, gw.url+"/nosuch"+c.path, "")
		if anon != http.StatusUnauthorized || anonUnknown != http.StatusUnauthorized {
			t.Fatalf("%s %s without a key: gh %d, unknown %d; want 401 for both", c.method, c.path, anon, anonUnknown)
		}
	}
	if status, body := rawAs(t, http.MethodDelete, gw.url+"/gh/token", alice); status != http.StatusOK {
		t.Fatalf("a key allowed gh: DELETE /gh/token = %d %s", status, body)
	}
}
