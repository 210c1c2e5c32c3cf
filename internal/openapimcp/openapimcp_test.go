package openapimcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func kennel(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "openapi", "kennel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type toolDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	Annotations map[string]any `json:"annotations"`
}

func toolsOf(t *testing.T, s *Server) map[string]toolDef {
	t.Helper()
	var list struct {
		Tools []toolDef `json:"tools"`
	}
	if err := json.Unmarshal(s.Tools(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]toolDef{}
	for _, d := range list.Tools {
		out[d.Name] = d
	}
	return out
}

func TestKennelTools(t *testing.T) {
	s, err := build(kennel(t), Options{Name: "kennel", Client: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	if s.base.String() != "https://kennel.example.invalid/v1" {
		t.Errorf("base = %s, want the servers[0] url with its variable", s.base)
	}
	tools := toolsOf(t, s)
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"checkInDog", "checkOutDog", "getDog", "listDogs", "put_dogs_dogId_walks"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
	if d := tools["checkInDog"].Description; d != "Check a dog in\n\nThe kennel assigns the dog's id." {
		t.Errorf("description = %q", d)
	}
	list := tools["listDogs"].InputSchema["properties"].(map[string]any)
	if list["breed"].(map[string]any)["description"] != "Only dogs of this breed." || list["limit"].(map[string]any)["type"] != "integer" {
		t.Errorf("listDogs properties = %v", list)
	}
	del := tools["checkOutDog"]
	if req := del.InputSchema["required"].([]any); len(req) != 2 || del.Annotations["destructiveHint"] != true {
		t.Errorf("checkOutDog = %+v", del)
	}
	body := tools["checkInDog"].InputSchema["properties"].(map[string]any)["body"].(map[string]any)
	owner := body["properties"].(map[string]any)["owner"].(map[string]any)
	dogs := owner["properties"].(map[string]any)["dogs"].(map[string]any)
	if items := dogs["items"].(map[string]any); len(items) != 0 {
		t.Errorf("the NewDog → Owner → NewDog cycle is not cut: %v", items)
	}
	if tools["listDogs"].Annotations["readOnlyHint"] != true {
		t.Errorf("GET is not read-only: %v", tools["listDogs"].Annotations)
	}
}

func TestCallKennel(t *testing.T) {
	var seen *http.Request
	var seenBody string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		b, _ := io.ReadAll(r.Body)
		seenBody = string(b)
		switch {
		case r.URL.Path == "/api/dogs/a%2Fb" || r.URL.RawPath == "/api/dogs/a%2Fb":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"a/b","name":"Rex"}`)
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, seenBody)
		default:
			http.Error(w, "no such dog", http.StatusNotFound)
		}
	}))
	defer api.Close()
	s, err := build(kennel(t), Options{BaseURL: api.URL + "/api/", Client: api.Client()})
	if err != nil {
		t.Fatal(err)
	}
	call := func(name, args string, hdr http.Header) (string, bool) {
		t.Helper()
		raw, err := s.CallTool(context.Background(), json.RawMessage(`{"name":"`+name+`","arguments":`+args+`}`), hdr)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("result %s: %v", raw, err)
		}
		return res.Content[0].Text, res.IsError
	}
	text, isErr := call("getDog", `{"dogId":"a/b"}`, http.Header{"X-Api-Key": {"secret"}})
	if isErr || text != "{\n  \"id\": \"a/b\",\n  \"name\": \"Rex\"\n}" || seen.Header.Get("X-Api-Key") != "secret" {
		t.Errorf("getDog = %q %v (key %q)", text, isErr, seen.Header.Get("X-Api-Key"))
	}
	text, isErr = call("checkOutDog", `{"dogId":"x","X-Pickup-Person":"Ann"}`, http.Header{"X-Pickup-Person": {"gateway"}})
	if !isErr || !strings.HasPrefix(text, "HTTP 404 Not Found: no such dog") || seen.Method != http.MethodDelete || seen.Header.Get("X-Pickup-Person") != "gateway" {
		t.Errorf("checkOutDog = %q %v, header %q (the server's headers win)", text, isErr, seen.Header.Get("X-Pickup-Person"))
	}
	_, _ = call("listDogs", `{"breed":"collie","limit":3}`, nil)
	if seen.URL.Query().Get("breed") != "collie" || seen.URL.Query().Get("limit") != "3" {
		t.Errorf("listDogs query = %s", seen.URL.RawQuery)
	}
	text, isErr = call("checkInDog", `{"body":{"name":"Rex"}}`, nil)
	if isErr || seenBody != `{"name":"Rex"}` || seen.Header.Get("Content-Type") != "application/json" {
		t.Errorf("checkInDog = %q %v, body %q", text, isErr, seenBody)
	}
	if text, isErr = call("getDog", `{}`, nil); !isErr || !strings.Contains(text, "dogId") {
		t.Errorf("getDog without its path argument = %q %v", text, isErr)
	}
	if _, err := s.CallTool(context.Background(), json.RawMessage(`{"name":"nope"}`), nil); err == nil {
		t.Error("an unknown tool was called")
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, doc := range []string{
		`swagger: "2.0"`,
		`[1, 2]`,
		`openapi: 3.0.0` + "\npaths: {}\n", // no base URL
		`openapi: 3.0.0` + "\nservers: [{url: /relative}]\npaths: {}\n", // relative base URL
		"openapi: 3.0.0\n" + strings.Repeat(" ", MaxSpecBytes),
	} {
		if _, err := build([]byte(doc), Options{Client: http.DefaultClient}); err == nil {
			t.Errorf("build(%.40q) succeeded", doc)
		}
	}
}

// FuzzConvert: any document either is refused or converts to tools whose names are unique,
// safe and short, and whose list encodes; never a panic or an unbounded expansion.
func FuzzConvert(f *testing.F) {
	f.Add(kennel(f))
	f.Add([]byte(`{"openapi":"3.1.0","servers":[{"url":"http://x"}],"paths":{"/a/{b}":{"get":{"parameters":[{"$ref":"#/p"}]}}},"p":{"name":"b","in":"path","schema":{"$ref":"#/p"}}}`))
	f.Add([]byte("openapi: 3.0.0\nservers: [{url: 'http://h'}]\npaths:\n  /x: &a\n    get: {operationId: 'a b', requestBody: {content: {application/vnd+json: {schema: {$ref: '#/paths/~1x'}}}}}\n  /y: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := build(data, Options{BaseURL: "http://127.0.0.1:1", Client: http.DefaultClient})
		if err != nil {
			return
		}
		var list struct {
			Tools []toolDef `json:"tools"`
		}
		if err := json.Unmarshal(s.Tools(), &list); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, d := range list.Tools {
			if d.Name == "" || len(d.Name) > 72 || seen[d.Name] || unsafeName.MatchString(d.Name) {
				t.Fatalf("bad tool name %q", d.Name)
			}
			seen[d.Name] = true
		}
	})
}
