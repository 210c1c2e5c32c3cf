package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// petstoreAPI is an HTTP service implementing part of the Swagger Petstore (the published
// OpenAPI 3.0 document from @readme/oas-examples) under /v2, refusing requests without
// X-API-Key: petstore-secret.
func petstoreAPI(t *testing.T) string {
	t.Helper()
	var mu sync.Mutex
	pets := map[int]map[string]any{}
	next := 1
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/pet", func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p["name"] == nil {
			http.Error(w, "Invalid input", http.StatusMethodNotAllowed)
			return
		}
		mu.Lock()
		p["id"] = next
		pets[next] = p
		next++
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(p)
	})
	mux.HandleFunc("GET /v2/pet/findByStatus", func(w http.ResponseWriter, r *http.Request) {
		want := r.URL.Query()["status"]
		mu.Lock()
		defer mu.Unlock()
		out := []map[string]any{}
		for _, p := range pets {
			if s, _ := p["status"].(string); slices.Contains(want, s) {
				out = append(out, p)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /v2/pet/{petId}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("petId"))
		mu.Lock()
		p, ok := pets[id]
		mu.Unlock()
		if !ok {
			http.Error(w, "Pet not found", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(p)
	})
	mux.HandleFunc("DELETE /v2/pet/{petId}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("petId"))
		mu.Lock()
		delete(pets, id)
		mu.Unlock()
	})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "petstore-secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	return api.URL
}

// TestOpenAPIPetstoreFromNPM: the Swagger Petstore document as published on npm
// (@readme/oas-examples) becomes the petstore server's tools, and they are called end to end
// against a service implementing it, in both eras.
func TestOpenAPIPetstoreFromNPM(t *testing.T) {
	spec := testpeers.PetstoreSpec(t)
	api := petstoreAPI(t)
	g := startGateway(t, fmt.Sprintf(`
general_settings:
  master_key: %s
mcp_servers:
  petstore: {url: %s/v2, spec_path: %s, auth_type: api_key, auth_value: petstore-secret}
`, testKey, api, spec), nil)
	for _, era := range openAPIEras(t, g.url) {
		t.Run(era.name, func(t *testing.T) {
			names := era.listTools(t, g.url)
			if len(names) != 20 {
				t.Errorf("tools/list has %d tools, want the document's 20 operations: %v", len(names), names)
			}
			for _, want := range []string{"petstore-addPet", "petstore-getPetById", "petstore-findPetsByStatus", "petstore-deletePet", "petstore-loginUser"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools/list lacks %s: %v", want, names)
				}
			}
			call := func(name, args string) (string, bool) {
				t.Helper()
				return era.callText(t, g.url, name, args)
			}
			text, isErr := call("petstore-addPet", `{"body":{"name":"doggie-`+era.name+`","photoUrls":[],"status":"available"}}`)
			var added struct {
				ID int `json:"id"`
			}
			if err := json.Unmarshal([]byte(text), &added); isErr || err != nil || added.ID == 0 {
				t.Fatalf("addPet = %q %v", text, isErr)
			}
			id := strconv.Itoa(added.ID)
			text, isErr = call("petstore-getPetById", `{"petId":`+id+`}`)
			if isErr || !strings.Contains(text, `"name": "doggie-`+era.name+`"`) {
				t.Errorf("getPetById = %q %v", text, isErr)
			}
			text, isErr = call("petstore-findPetsByStatus", `{"status":["available","pending"]}`)
			if isErr || !strings.Contains(text, "doggie-"+era.name) {
				t.Errorf("findPetsByStatus = %q %v", text, isErr)
			}
			if text, isErr = call("petstore-deletePet", `{"petId":`+id+`}`); isErr {
				t.Errorf("deletePet = %q", text)
			}
			text, isErr = call("petstore-getPetById", `{"petId":`+id+`}`)
			if !isErr || !strings.HasPrefix(text, "HTTP 404") {
				t.Errorf("getPetById after delete = %q %v", text, isErr)
			}
		})
	}
}
