package gateway

import (
	"reflect"
	"testing"

	"github.com/mcpgw/mcpgw/internal/identity"
)

// TestOptionsAddressedHeaders: a header addressed to a server reaches it
// alone, whatever the fan-out; x-mcp-auth follows the one-server rule; the
// signed identity wins over anything the caller sent under its name.
func TestOptionsAddressedHeaders(t *testing.T) {
	ident := func(c *identity.Caller) (string, string) { return "X-Mcp-Gateway-Identity", "signed-for-" + c.UserID }
	gh := &Server{Name: "github", ExtraHeaders: []string{"X-Mcp-Jira-Authorization", "X-Mcp-Gateway-Identity"}, Identity: ident}
	gitlab := &Server{Name: "git", Alias: "lab"}
	jira := &Server{Name: "jira", Delegate: true}
	g := New(Config{Servers: []*Server{gh, gitlab, jira}})
	hdr := map[string][]string{
		"Authorization":                       {"Bearer caller"},
		"X-Mcp-Github-Authorization":          {"Bearer gh"},
		"X-Mcp-Lab-X-Token":                   {"lab-token"},
		"X-Mcp-Jira-Authorization":            {"Basic amlyYQ=="},
		"X-Mcp-Auth":                          {" legacy "},
		"X-Mcp-Gateway-Identity":              {"forged"},
		"X-Mcp-Github-X-Mcp-Gateway-Identity": {"forged too"},
	}
	op := &Operation{Caller: &identity.Caller{UserID: "alice"}, Credentials: NewCredentials(hdr, false, "caller")}
	for _, tc := range []struct {
		s         *Server
		multi     bool
		wantHdr   map[string][]string
		wantToken string
	}{
		{gh, true, map[string][]string{"Authorization": {"Bearer gh"}, "X-Mcp-Gateway-Identity": {"signed-for-alice"}}, ""},
		{gh, false, map[string][]string{"Authorization": {"Bearer gh"}, "X-Mcp-Gateway-Identity": {"signed-for-alice"}}, "legacy"},
		{gitlab, true, map[string][]string{"X-Token": {"lab-token"}}, ""},
		{gitlab, false, map[string][]string{"X-Token": {"lab-token"}}, "legacy"},
		{jira, true, map[string][]string{"Authorization": {"Basic amlyYQ=="}}, ""},
		{jira, false, map[string][]string{"Authorization": {"Basic amlyYQ=="}}, "caller"},
	} {
		got := g.options(tc.s, op, tc.multi)
		if !reflect.DeepEqual(map[string][]string(got.Header), tc.wantHdr) || got.Token != tc.wantToken {
			t.Errorf("%s multi=%v: header %v token %q, want %v %q", tc.s.Name, tc.multi, got.Header, got.Token, tc.wantHdr, tc.wantToken)
		}
	}
}
