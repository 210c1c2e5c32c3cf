package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
)

// kennelAPI is an HTTP service implementing test/testdata/openapi/kennel.yaml under /v1,
// refusing requests without X-API-Key: kennel-secret.
func kennelAPI(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	dogs := map[string]map[string]any{"d1": {"id": "d1", "name": "Rex", "breed": "collie"}}
	next := 2
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/dogs", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		out := []map[string]any{}
		for _, d := range dogs {
			if b := r.URL.Query().Get("breed"); b == "" || d["breed"] == b {
				out = append(out, d)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /v1/dogs", func(w http.ResponseWriter, r *http.Request) {
		var d map[string]any
		if err := json.NewDecoder(r.Body).Decode(&d); err != nil || d["name"] == nil {
			http.Error(w, `{"error":"name is required"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		d["id"] = fmt.Sprintf("d%d", next)
		next++
		dogs[d["id"].(string)] = d
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("GET /v1/dogs/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d, ok := dogs[r.PathValue("id")]
		mu.Unlock()
		if !ok {
			http.Error(w, "no dog "+r.PathValue("id"), http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("DELETE /v1/dogs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Pickup-Person") == "" {
			http.Error(w, "who picks the dog up?", http.StatusBadRequest)
			return
		}
		mu.Lock()
		delete(dogs, r.PathValue("id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /v1/dogs/{id}/walks", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "walk of %s recorded: %s", r.PathValue("id"), b)
	})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "kennel-secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	return api.URL
}

// openAPIEra is one protocol era an OpenAPI test drives the gateway in.
type openAPIEra struct {
	name string
	hdr  func(method, name string) map[string]string
	meta string
}

// openAPIEras are the modern era and a legacy session opened with testKey on gw.
func openAPIEras(t *testing.T, gw string) []openAPIEra {
	t.Helper()
	sid := initLegacy(t, gw+"/mcp", testKey)
	return []openAPIEra{
		{"modern", modernHeaders, modernMeta},
		{"legacy", func(string, string) map[string]string { return legacyHeaders(testKey, sid) }, `"_meta":{}`},
	}
}

// listTools is the names tools/list gives on gw in era.
func (era openAPIEra) listTools(t *testing.T, gw string) []string {
	t.Helper()
	_, _, body := rpc(t, gw+"/mcp", era.hdr("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+era.meta+`}}`)
	return toolsOf(body)
}

// callText calls tool name on gw in era and returns its one text content and isError.
func (era openAPIEra) callText(t *testing.T, gw, name, args string) (string, bool) {
	t.Helper()
	status, _, res := rpc(t, gw+"/mcp", era.hdr("tools/call", name), callBody(name, args, era.meta, ""))
	r := resultOf(res)
	content, _ := r["content"].([]any)
	if status != 200 || len(content) != 1 {
		t.Fatalf("tools/call %s: %d %v", name, status, res)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isErr, _ := r["isError"].(bool)
	return text, isErr
}

// TestOpenAPIServerEndToEnd: a spec_path server serves the kennel document's operations as
// tools through the gateway, in both eras, called against the API with the server's api_key.
func TestOpenAPIServerEndToEnd(t *testing.T) {
	api := kennelAPI(t)
	spec, err := filepath.Abs(filepath.Join("..", "testdata", "openapi", "kennel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  kennel: {url: %s/v1, spec_path: %s, auth_type: api_key, auth_value: kennel-secret}
  nokey: {url: %s/v1, spec_path: %s}
`, testKey, api, spec, api, spec), nil)
	for _, era := range openAPIEras(t, g.url) {
		t.Run(era.name, func(t *testing.T) {
			names := era.listTools(t, g.url)
			for _, want := range []string{"kennel-listDogs", "kennel-checkInDog", "kennel-getDog", "kennel-checkOutDog", "kennel-put_dogs_dogId_walks"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list lacks %s: %v", want, names)
				}
			}
			call := func(name, args string) (string, bool) {
				t.Helper()
				return era.callText(t, g.url, name, args)
			}
			text, isErr := call("kennel-getDog", `{"dogId":"d1"}`)
			if isErr || !strings.Contains(text, `"name": "Rex"`) {
				t.Errorf("getDog = %q %v", text, isErr)
			}
			text, isErr = call("kennel-checkInDog", `{"body":{"name":"Fido","breed":"pug"}}`)
			if isErr || !strings.Contains(text, `"name": "Fido"`) {
				t.Errorf("checkInDog = %q %v", text, isErr)
			}
			text, isErr = call("kennel-listDogs", `{"breed":"pug"}`)
			if isErr || !strings.Contains(text, "Fido") || strings.Contains(text, "Rex") {
				t.Errorf("listDogs breed=pug = %q %v", text, isErr)
			}
			text, isErr = call("kennel-put_dogs_dogId_walks", `{"dogId":"d1","body":{"minutes":20,"route":"park"}}`)
			if isErr || text != `walk of d1 recorded: {"minutes":20,"route":"park"}` {
				t.Errorf("walk = %q %v", text, isErr)
			}
			text, isErr = call("kennel-getDog", `{"dogId":"nope"}`)
			if !isErr || !strings.HasPrefix(text, "HTTP 404 Not Found") {
				t.Errorf("getDog nope = %q %v", text, isErr)
			}
			text, isErr = call("kennel-checkOutDog", `{"dogId":"d9","X-Pickup-Person":"Ann"}`)
			if isErr || text != "" {
				t.Errorf("checkOutDog = %q %v", text, isErr)
			}
			text, isErr = call("nokey-getDog", `{"dogId":"d1"}`)
			if !isErr || !strings.HasPrefix(text, "HTTP 401") || strings.Contains(text, "kennel-secret") {
				t.Errorf("getDog without the key = %q %v", text, isErr)
			}
		})
	}
}

// TestOpenAPISpecErrorsStopTheGateway: a spec_path that cannot be read or converted refuses
// the configuration, naming the server, never the document's contents.
func TestOpenAPISpecErrorsStopTheGateway(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing.yaml"), filepath.Join("..", "testdata", "openapi", "..")} {
		yaml := fmt.Sprintf("general_settings:\n  master_key: %s\nmcp_servers:\n  bad: {url: http://127.0.0.1:1, spec_path: %s}\n", testKey, path)
		cfg := loadConfig(t, yaml, func(string) (string, bool) { return "", false })
		a, err := app.New(cfg, app.WithDataDir(t.TempDir()), app.WithLogger(slog.New(slog.DiscardHandler)))
		if err == nil {
			_ = a.Close(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), `server "bad": spec_path`) {
			t.Errorf("spec_path %s: %v", path, err)
		}
	}
}

// TestOpenAPIToolsUnderPolicyRules: the annotations an OpenAPI server derives from methods
// reach mcp_policies, and what a rule hides is refused when called.
func TestOpenAPIToolsUnderPolicyRules(t *testing.T) {
	api := kennelAPI(t)
	spec, err := filepath.Abs(filepath.Join("..", "testdata", "openapi", "kennel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
  mcp_policies:
    - {name: read-only-api, effect: require, expr: 'server.transport != "openapi" || tool.annotations.readOnlyHint'}
mcp_servers:
  kennel: {url: %s/v1, spec_path: %s, auth_type: api_key, auth_value: kennel-secret}
`, testKey, api, spec), nil)
	_, _, body := rpc(t, g.url+"/mcp", modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`)
	if got := toolsOf(body); !sameSet(got, []string{"kennel-listDogs", "kennel-getDog"}) {
		t.Errorf("tools/list = %v, want the GET operations only", got)
	}
	_, _, res := rpc(t, g.url+"/mcp", modernHeaders("tools/call", "kennel-checkOutDog"), callBody("kennel-checkOutDog", `{"dogId":"d1","X-Pickup-Person":"Ann"}`, modernMeta, ""))
	if r := resultOf(res); r["isError"] != true || !strings.Contains(fmt.Sprint(r["content"]), "read-only-api") {
		t.Errorf("checkOutDog = %v, want refused by read-only-api", res)
	}
	_, _, res = rpc(t, g.url+"/mcp", modernHeaders("tools/call", "kennel-getDog"), callBody("kennel-getDog", `{"dogId":"d1"}`, modernMeta, ""))
	if r := resultOf(res); r["isError"] == true || !strings.Contains(fmt.Sprint(r["content"]), "Rex") {
		t.Errorf("getDog after the refused check-out = %v, want Rex still there", res)
	}
}
