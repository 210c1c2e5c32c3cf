package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// TestAPIServersCannotReadGatewaySecrets: a server posted through the API
// (stored or previewed) may not reference the gateway's own secrets with
// os.environ/; the refusal says why and never holds the value.
func TestAPIServersCannotReadGatewaySecrets(t *testing.T) {
	var log fakemcp.LogBuffer
	vars := map[string]string{"LITELLM_MASTER_KEY": "MARK-MASTER-1", "LITELLM_SALT_KEY": "MARK-SALT-1",
		"REDIS_PASSWORD": "MARK-REDIS-1", "TENANT": "acme"}
	_, base, _ := storedApp(t, vars, &log)
	for _, name := range []string{"LITELLM_MASTER_KEY", "LITELLM_SALT_KEY", "DATABASE_URL", "REDIS_PASSWORD", "litellm_master_key"} {
		for _, path := range []string{"/v1/mcp/server", "/mcp-rest/test/connection"} {
			status, body := api(t, "POST", base+path, fmt.Sprintf(`{"server_name":"dyn","url":"https://x.example/mcp",
				"static_headers":{"X-Leak":"os.environ/%s"}}`, name))
			if status != http.StatusBadRequest || !strings.Contains(body, "one of the gateway's own secrets") {
				t.Fatalf("%s %s = %d %s", path, name, status, body)
			}
			if strings.Contains(body, "MARK-") {
				t.Fatalf("the refusal holds a secret: %s", body)
			}
		}
	}
	status, body := api(t, "POST", base+"/v1/mcp/server", `{"server_name":"ok","url":"https://x.example/mcp",
		"static_headers":{"X-Tenant":"os.environ/TENANT"}}`)
	if status != http.StatusCreated {
		t.Fatalf("an ordinary reference = %d %s", status, body)
	}
	if strings.Contains(log.String(), "MARK-") {
		t.Fatal("a secret reached the log")
	}
}
