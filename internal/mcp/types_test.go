package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestServerCapabilityPresence(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		tools bool
		other map[string]bool
	}{
		{"empty object present", `{"tools":{}}`, true, nil},
		{"null absent", `{"tools":null}`, false, nil},
		{"missing absent", `{}`, false, nil},
		{"settings present", `{"tools":{"listChanged":true}}`, true, nil},
		{"false settings still present", `{"tools":{"listChanged":false}}`, true, nil},
		{"all", `{"experimental":{},"logging":{},"completions":{},"prompts":{},"resources":{},"tools":{},"extensions":{},"tasks":{}}`, true,
			map[string]bool{"experimental": true, "logging": true, "completions": true, "prompts": true, "resources": true, "extensions": true, "tasks": true}},
		{"nulls", `{"logging":null,"completions":null,"prompts":null,"resources":null}`, false,
			map[string]bool{"logging": false, "completions": false, "prompts": false, "resources": false}},
		{"case matters", `{"Tools":{}}`, false, map[string]bool{"Tools": true}},
		{"unknown key", `{"futureThing":{}}`, false, map[string]bool{"futureThing": true, "other": false}},
	}
	for _, tt := range tests {
		var c ServerCapabilities
		if err := json.Unmarshal([]byte(tt.in), &c); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if c.HasTools() != tt.tools || c.Has("tools") != tt.tools {
			t.Errorf("%s: HasTools = %v", tt.name, c.HasTools())
		}
		for k, want := range tt.other {
			if got := c.Has(k); got != want {
				t.Errorf("%s: Has(%q) = %v", tt.name, k, got)
			}
		}
		if c.HasPrompts() != c.Has("prompts") || c.HasResources() != c.Has("resources") ||
			c.HasCompletions() != c.Has("completions") || c.HasLogging() != c.Has("logging") {
			t.Errorf("%s: helper/Has disagreement", tt.name)
		}
	}
}

func TestServerCapabilityFlags(t *testing.T) {
	var c ServerCapabilities
	in := `{"tools":{"listChanged":true},"prompts":{"listChanged":false},"resources":{"subscribe":true,"listChanged":"yes"},
	        "extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":null}}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if !c.ToolsListChanged() || c.PromptsListChanged() || c.ResourcesListChanged() || !c.ResourcesSubscribe() {
		t.Errorf("flags: tools %v prompts %v resources %v subscribe %v",
			c.ToolsListChanged(), c.PromptsListChanged(), c.ResourcesListChanged(), c.ResourcesSubscribe())
	}
	if !c.HasExtension(ExtensionTasks) || c.HasExtension(ExtensionUI) || c.HasExtension("x") {
		t.Error("HasExtension")
	}
	var empty ServerCapabilities
	if empty.ToolsListChanged() || empty.HasExtension(ExtensionTasks) || empty.HasTools() {
		t.Error("zero value claims capabilities")
	}
	// A malformed capability value is present but has no settings.
	var odd ServerCapabilities
	if err := json.Unmarshal([]byte(`{"tools":true}`), &odd); err != nil {
		t.Fatal(err)
	}
	if !odd.HasTools() || odd.ToolsListChanged() {
		t.Error("malformed tools value")
	}
}

// roundTrip unmarshals in into v, marshals it back, and compares semantically.
func roundTrip(t *testing.T, in string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(in), v); err != nil {
		t.Fatalf("unmarshal %s: %v", in, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("output invalid: %s", out)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("round trip changed the value:\n in  %s\n out %s", in, out)
	}
}

func TestUnknownMembersPreserved(t *testing.T) {
	roundTrip(t, `{"name":"up","version":"2.3.0","title":"Up","description":"d","websiteUrl":"https://x","icons":[{"src":"a.png"}],"vendorField":{"a":[1,2]},"Name":"case-variant"}`, &Implementation{})
	roundTrip(t, `{"tools":{"listChanged":true},"resources":{"subscribe":true},"logging":{},"completions":{},"prompts":null,"extensions":{"io.modelcontextprotocol/tasks":{}},"tasks":{},"experimental":{},"future":[1]}`, &ServerCapabilities{})
	roundTrip(t, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"},"instructions":"hi","_meta":{"k":"v"},"other":true}`, &InitializeResult{})
	roundTrip(t, `{"resultType":"complete","supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true},"extensions":{"io.modelcontextprotocol/tasks":{}}},"instructions":"...","ttlMs":3600000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"2.3.0"}},"newField":{"z":null}}`, &DiscoverResult{})
}

func TestExactMemberNames(t *testing.T) {
	var c ServerCapabilities
	if err := json.Unmarshal([]byte(`{"TOOLS":{},"tools":null}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.HasTools() {
		t.Error("TOOLS must not count as tools")
	}
	if _, ok := c.Extra["TOOLS"]; !ok {
		t.Error("TOOLS must be kept in Extra")
	}
	var impl Implementation
	if err := json.Unmarshal([]byte(`{"NAME":"x","version":"1"}`), &impl); err != nil {
		t.Fatal(err)
	}
	if impl.Name != "" || string(impl.Extra["NAME"]) != `"x"` {
		t.Errorf("NAME matched name: %+v", impl)
	}
}

func TestShapeErrorsAndNull(t *testing.T) {
	for _, in := range []string{`[]`, `"x"`, `{"name":5}`, `{"capabilities":[]}`} {
		var ir InitializeResult
		var impl Implementation
		if json.Unmarshal([]byte(in), &ir) == nil && json.Unmarshal([]byte(in), &impl) == nil {
			t.Errorf("%s: expected an error", in)
		}
	}
	impl := Implementation{Name: "keep"}
	if err := json.Unmarshal([]byte(`null`), &impl); err != nil || impl.Name != "keep" {
		t.Errorf("null must be a no-op: %+v %v", impl, err)
	}
}

func TestMarshalShapes(t *testing.T) {
	ttl := int64(0)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"zero caps", ServerCapabilities{}, `{}`},
		{"caps with extra", ServerCapabilities{Tools: json.RawMessage(`{}`), Extra: map[string]json.RawMessage{"zz": json.RawMessage(` { "a" : 1 } `), "aa": nil, "tools": json.RawMessage(`1`)}},
			`{"tools":{},"aa":null,"zz":{"a":1}}`},
		{"implementation", Implementation{Name: "gw", Version: "0.1.0"}, `{"name":"gw","version":"0.1.0"}`},
		{"implementation required members", Implementation{}, `{"name":"","version":""}`},
		{"discover", DiscoverResult{ResultType: ResultTypeComplete, TTLMs: &ttl, CacheScope: CacheScopePrivate},
			`{"resultType":"complete","supportedVersions":[],"capabilities":{},"ttlMs":0,"cacheScope":"private"}`},
		{"initialize result", InitializeResult{ProtocolVersion: V20251125, ServerInfo: Implementation{Name: "s", Version: "1"}, Capabilities: ServerCapabilities{Logging: json.RawMessage(`{}`)}},
			`{"protocolVersion":"2025-11-25","capabilities":{"logging":{}},"serverInfo":{"name":"s","version":"1"}}`},
		{"unsupported version data", UnsupportedVersionData{Supported: []string{"2026-07-28", "2025-11-25"}, Requested: "2027-01-01"},
			`{"supported":["2026-07-28","2025-11-25"],"requested":"2027-01-01"}`},
		{"missing capability data", MissingCapabilityData{RequiredCapabilities: map[string]json.RawMessage{"elicitation": json.RawMessage(`{"form":{}}`)}},
			`{"requiredCapabilities":{"elicitation":{"form":{}}}}`},
		{"resource not found data", ResourceNotFoundData{URI: "file:///x"}, `{"uri":"file:///x"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.v)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	if _, err := json.Marshal(ServerCapabilities{Extra: map[string]json.RawMessage{"bad": json.RawMessage(`{`)}}); err == nil {
		t.Error("invalid extra must fail")
	}
	// Pointer receivers marshal the same way.
	got, _ := json.Marshal(&Implementation{Name: "a", Version: "b", Extra: map[string]json.RawMessage{"x": json.RawMessage(`1`)}})
	if string(got) != `{"name":"a","version":"b","x":1}` {
		t.Errorf("pointer marshal: %s", got)
	}
}

func TestDiscoverResultHelpers(t *testing.T) {
	in := `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"use me","ttlMs":3600000,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"2.3.0"}}}`
	var r DiscoverResult
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.TTL() != 3600000 || r.CacheScope != "public" || !ValidCacheScope(r.CacheScope) || r.ResultType != ResultTypeComplete {
		t.Errorf("fields: %+v", r)
	}
	info, ok := r.ServerInfo()
	if !ok || info.Name != "up" || info.Version != "2.3.0" {
		t.Errorf("ServerInfo = %+v, %v", info, ok)
	}
	ir := r.ToInitializeResult(V20251125)
	out, err := json.Marshal(ir)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"up","version":"2.3.0"},"instructions":"use me"}`
	if string(out) != want {
		t.Errorf("InitializeResult:\n got %s\nwant %s", out, want)
	}

	var bare DiscoverResult
	if err := json.Unmarshal([]byte(`{"supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":-5,"_meta":{"io.modelcontextprotocol/serverInfo":"nope"}}`), &bare); err != nil {
		t.Fatal(err)
	}
	if bare.TTL() != 0 {
		t.Error("negative ttl must read as 0")
	}
	if _, ok := bare.ServerInfo(); ok {
		t.Error("malformed serverInfo must not be ok")
	}
	if (DiscoverResult{}).TTL() != 0 {
		t.Error("absent ttl must read as 0")
	}
}

func TestSmallConstants(t *testing.T) {
	for got, want := range map[string]string{
		ResultTypeComplete: "complete", ResultTypeInputRequired: "input_required", ResultTypeTask: "task",
		CacheScopePublic: "public", CacheScopePrivate: "private",
		ExtensionTasks: "io.modelcontextprotocol/tasks", ExtensionUI: "io.modelcontextprotocol/ui",
		MetaProtocolVersion: "io.modelcontextprotocol/protocolVersion", MetaClientCapabilities: "io.modelcontextprotocol/clientCapabilities",
		MetaClientInfo: "io.modelcontextprotocol/clientInfo", MetaLogLevel: "io.modelcontextprotocol/logLevel",
		MetaServerInfo: "io.modelcontextprotocol/serverInfo", MetaSubscriptionID: "io.modelcontextprotocol/subscriptionId",
		MetaProgressToken: "progressToken",
	} {
		if got != want {
			t.Errorf("%q != %q", got, want)
		}
	}
	if ValidCacheScope("") || ValidCacheScope("Public") {
		t.Error("ValidCacheScope")
	}
}
