package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/fakemcp"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// registryMarkers are distinct secrets, one per credential field of a stored server.
var registryMarkers = []string{"MARKER-AUTH-VALUE-7f3a", "MARKER-CLIENT-SECRET-7f3a", "MARKER-STATIC-HEADER-7f3a",
	"MARKER-ENV-VALUE-7f3a", "MARKER-AUTH-VALUE-BADUPDATE-7f3a"}

// registryCall calls a /v1/mcp/* route with the master key and returns the raw answer.
func registryCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serverTools lists server's tools through the REST route: the status and the tool names.
func serverTools(t *testing.T, gw, server string) (int, []string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, gw+"/mcp-rest/tools/list?server_id="+server, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return resp.StatusCode, names
}

// withinASecond polls ok for up to 1 s (the replicas' promise), failing the test with what.
func withinASecond(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 1 s: %s", what)
		}
	}
}

// registryGateway serves a gateway with store_model_in_db on st's database (dbEnv, shared by
// replicas), logging into log.
func registryGateway(t *testing.T, yaml string, env map[string]string, log *fakemcp.LogBuffer) string {
	t.Helper()
	return startGatewayWith(t, yaml, env, app.WithLogger(log.Logger()), app.WithDataDir(t.TempDir())).url
}

// TestServersAPIAppliesOnEveryReplica: a server added, changed and deleted through
// /v1/mcp/server on replica A is served (and then no longer served) by replica B within 1 s:
// SQLite has one replica (A is B); Postgres two on one database. Secret markers in every
// credential field never appear in an answer of either replica, nor in their logs.
func TestServersAPIAppliesOnEveryReplica(t *testing.T) {
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	forEachStore(t, func(t *testing.T, st storeBackend) {
		storeEnv, _ := st.fresh(t)
		env := map[string]string{"LITELLM_SALT_KEY": "replica-shared-salt", "FIXTURE_TENANT": "tenant-1"}
		for k, v := range storeEnv {
			env[k] = v
		}
		yaml := fmt.Sprintf("general_settings:\n  master_key: %s\n  store_model_in_db: true\nmcp_servers:\n  fx:\n    url: %s\n",
			testKey, fixture)
		var logA, logB fakemcp.LogBuffer
		gwA := registryGateway(t, yaml, env, &logA)
		gwB, logs := gwA, []*fakemcp.LogBuffer{&logA}
		if st.name == "postgres" {
			gwB, logs = registryGateway(t, yaml, env, &logB), append(logs, &logB)
		}
		answers := []string{}
		call := func(gw, method, path, body string) (int, string) {
			status, out := registryCall(t, method, gw+path, body)
			answers = append(answers, out)
			return status, out
		}

		if status, _ := serverTools(t, gwB, "dyn"); status != http.StatusNotFound {
			t.Fatalf("B lists the server before it exists: %d", status)
		}
		status, body := call(gwA, "POST", "/v1/mcp/server", fmt.Sprintf(`{"server_name":"dyn","url":%q,
			"auth_type":"api_key","mcp_info":{"protocol_version":"2025-11-25"},
			"credentials":{"auth_value":"MARKER-AUTH-VALUE-7f3a","client_secret":"MARKER-CLIENT-SECRET-7f3a"},
			"static_headers":{"X-Marker":"MARKER-STATIC-HEADER-7f3a","X-Tenant":"os.environ/FIXTURE_TENANT"},
			"env":{"MARKER_ENV":"MARKER-ENV-VALUE-7f3a"}}`, fixture))
		if status != http.StatusCreated {
			t.Fatalf("POST on A = %d %s", status, body)
		}
		var created struct {
			ServerID string `json:"server_id"`
		}
		_ = json.Unmarshal([]byte(body), &created)
		var all []string
		withinASecond(t, "B serves the server A added", func() bool {
			status, names := serverTools(t, gwB, "dyn")
			all = names
			return status == 200 && len(names) > 1
		})

		status, body = call(gwA, "PUT", "/v1/mcp/server", fmt.Sprintf(`{"server_id":%q,"allowed_tools":[%q]}`, created.ServerID, all[0]))
		if status != http.StatusOK {
			t.Fatalf("PUT on A = %d %s", status, body)
		}
		withinASecond(t, "B narrows the server's tools as A's update says", func() bool {
			_, names := serverTools(t, gwB, "dyn")
			return slices.Equal(names, all[:1])
		})
		// A refused update carrying a secret.
		if status, body := call(gwB, "PUT", "/v1/mcp/server", fmt.Sprintf(`{"server_id":%q,"auth_type":"bogus",
			"credentials":{"auth_value":"MARKER-AUTH-VALUE-BADUPDATE-7f3a"}}`, created.ServerID)); status != http.StatusBadRequest {
			t.Fatalf("a bad update on B = %d %s", status, body)
		}
		for _, gw := range []string{gwA, gwB} {
			if status, body := call(gw, "GET", "/v1/mcp/server", ""); status != 200 || !strings.Contains(body, `"server_name":"dyn"`) {
				t.Fatalf("list = %d %s", status, body)
			}
			if status, body := call(gw, "GET", "/v1/mcp/server/"+created.ServerID, ""); status != 200 {
				t.Fatalf("get = %d %s", status, body)
			}
		}

		if status, body := call(gwA, "DELETE", "/v1/mcp/server/"+created.ServerID, ""); status != http.StatusAccepted {
			t.Fatalf("DELETE on A = %d %s", status, body)
		}
		withinASecond(t, "B stops serving the server A deleted", func() bool {
			status, _ := serverTools(t, gwB, "dyn")
			return status == http.StatusNotFound
		})
		if status, names := serverTools(t, gwB, "fx"); status != 200 || len(names) == 0 {
			t.Fatalf("the file's server on B = %d %v", status, names)
		}
		for i, a := range answers {
			for _, m := range registryMarkers {
				if strings.Contains(a, m) {
					t.Errorf("answer %d holds %s: %s", i, m, a)
				}
			}
		}
		for _, l := range logs {
			for _, m := range registryMarkers {
				if strings.Contains(l.String(), m) {
					t.Errorf("a replica's log holds %s", m)
				}
			}
		}
	})
}
