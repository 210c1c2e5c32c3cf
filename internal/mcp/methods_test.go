package mcp

import "testing"

// methodRow is the expected method table, written out independently of specOf.
type methodRow struct {
	method         string
	clientLegacy   bool
	clientModern   bool
	serverLegacy   bool
	serverModern   bool
	removed        bool
	modernOnly     bool
	inputRequired  bool
	nameParam      string
	serverToClient bool
	inputReq       string
	serverCap      string
	cacheable      bool
	paginated      bool
}

var methodRows = []methodRow{
	{method: "initialize", clientLegacy: true, removed: true},
	{method: "notifications/initialized", clientLegacy: true, removed: true},
	{method: "ping", clientLegacy: true, serverLegacy: true, removed: true, serverToClient: true},
	{method: "server/discover", clientModern: true, modernOnly: true, cacheable: true},
	{method: "tools/list", clientLegacy: true, clientModern: true, serverCap: "tools", cacheable: true, paginated: true},
	{method: "tools/call", clientLegacy: true, clientModern: true, inputRequired: true, nameParam: "name", serverCap: "tools"},
	{method: "prompts/list", clientLegacy: true, clientModern: true, serverCap: "prompts", cacheable: true, paginated: true},
	{method: "prompts/get", clientLegacy: true, clientModern: true, inputRequired: true, nameParam: "name", serverCap: "prompts"},
	{method: "resources/list", clientLegacy: true, clientModern: true, serverCap: "resources", cacheable: true, paginated: true},
	{method: "resources/templates/list", clientLegacy: true, clientModern: true, serverCap: "resources", cacheable: true, paginated: true},
	{method: "resources/read", clientLegacy: true, clientModern: true, inputRequired: true, nameParam: "uri", serverCap: "resources", cacheable: true},
	{method: "resources/subscribe", clientLegacy: true, removed: true, serverCap: "resources"},
	{method: "resources/unsubscribe", clientLegacy: true, removed: true, serverCap: "resources"},
	{method: "completion/complete", clientLegacy: true, clientModern: true, serverCap: "completions"},
	{method: "logging/setLevel", clientLegacy: true, removed: true, serverCap: "logging"},
	{method: "subscriptions/listen", clientModern: true, modernOnly: true},
	{method: "elicitation/create", serverLegacy: true, removed: true, serverToClient: true, inputReq: "elicitation"},
	{method: "sampling/createMessage", serverLegacy: true, removed: true, serverToClient: true, inputReq: "sampling"},
	{method: "roots/list", serverLegacy: true, removed: true, serverToClient: true, inputReq: "roots"},
	{method: "tasks/get", clientLegacy: true, serverLegacy: true, removed: true},
	{method: "tasks/result", clientLegacy: true, serverLegacy: true, removed: true},
	{method: "tasks/list", clientLegacy: true, serverLegacy: true, removed: true, paginated: true},
	{method: "tasks/cancel", clientLegacy: true, serverLegacy: true, removed: true},
	{method: "tasks/update"},
	{method: "notifications/tasks/status", clientLegacy: true, serverLegacy: true, removed: true},
	{method: "notifications/tasks"},
	{method: "notifications/cancelled", clientLegacy: true, clientModern: true, serverLegacy: true, serverModern: true},
	{method: "notifications/progress", clientLegacy: true, serverLegacy: true, serverModern: true},
	{method: "notifications/message", serverLegacy: true, serverModern: true},
	{method: "notifications/tools/list_changed", serverLegacy: true, serverModern: true},
	{method: "notifications/prompts/list_changed", serverLegacy: true, serverModern: true},
	{method: "notifications/resources/list_changed", serverLegacy: true, serverModern: true},
	{method: "notifications/resources/updated", serverLegacy: true, serverModern: true},
	{method: "notifications/subscriptions/acknowledged", serverModern: true, modernOnly: true},
	{method: "notifications/roots/list_changed", clientLegacy: true, removed: true},
	{method: "notifications/elicitation/complete", serverLegacy: true, removed: true},
}

func TestMethodTable(t *testing.T) {
	for _, r := range methodRows {
		m := r.method
		if !KnownMethod(m) {
			t.Errorf("KnownMethod(%q) = false", m)
		}
		check := func(name string, got, want any) {
			t.Helper()
			if got != want {
				t.Errorf("%s(%q) = %v, want %v", name, m, got, want)
			}
		}
		check("MethodInEra legacy", MethodInEra(m, EraLegacy), r.clientLegacy)
		check("MethodInEra modern", MethodInEra(m, EraModern), r.clientModern)
		check("MethodInEra unknown", MethodInEra(m, EraUnknown), false)
		check("ServerMethodInEra legacy", ServerMethodInEra(m, EraLegacy), r.serverLegacy)
		check("ServerMethodInEra modern", ServerMethodInEra(m, EraModern), r.serverModern)
		check("ServerMethodInEra unknown", ServerMethodInEra(m, EraUnknown), false)
		check("RemovedInModern", RemovedInModern(m), r.removed)
		check("ModernOnly", ModernOnly(m), r.modernOnly)
		check("MayReturnInputRequired", MayReturnInputRequired(m), r.inputRequired)
		check("NameParam", NameParam(m), r.nameParam)
		check("IsServerToClientRequest", IsServerToClientRequest(m), r.serverToClient)
		check("IsInputRequestMethod", IsInputRequestMethod(m), r.inputReq != "")
		check("InputRequestCapability", InputRequestCapability(m), r.inputReq)
		check("RequiredServerCapability", RequiredServerCapability(m), r.serverCap)
		check("CacheableMethod", CacheableMethod(m), r.cacheable)
		check("PaginatedMethod", PaginatedMethod(m), r.paginated)
		check("IsNotification", IsNotification(m), len(m) > 14 && m[:14] == "notifications/")
	}
}

// TestMethodConstants pins the wire spelling of every exported method constant.
func TestMethodConstants(t *testing.T) {
	consts := map[string]string{
		MethodInitialize: "initialize", MethodInitialized: "notifications/initialized", MethodPing: "ping",
		MethodDiscover: "server/discover", MethodToolsList: "tools/list", MethodToolsCall: "tools/call",
		MethodPromptsList: "prompts/list", MethodPromptsGet: "prompts/get", MethodResourcesList: "resources/list",
		MethodResourcesTemplatesList: "resources/templates/list", MethodResourcesRead: "resources/read",
		MethodResourcesSubscribe: "resources/subscribe", MethodResourcesUnsubscribe: "resources/unsubscribe",
		MethodCompletionComplete: "completion/complete", MethodLoggingSetLevel: "logging/setLevel",
		MethodSubscriptionsListen: "subscriptions/listen", MethodElicitationCreate: "elicitation/create",
		MethodSamplingCreateMessage: "sampling/createMessage", MethodRootsList: "roots/list",
		MethodTasksGet: "tasks/get", MethodTasksResult: "tasks/result", MethodTasksList: "tasks/list",
		MethodTasksCancel: "tasks/cancel", MethodTasksUpdate: "tasks/update",
		NotifCancelled: "notifications/cancelled", NotifProgress: "notifications/progress",
		NotifMessage: "notifications/message", NotifToolsListChanged: "notifications/tools/list_changed",
		NotifPromptsListChanged: "notifications/prompts/list_changed", NotifResourcesListChanged: "notifications/resources/list_changed",
		NotifResourcesUpdated: "notifications/resources/updated", NotifSubscriptionsAcknowledged: "notifications/subscriptions/acknowledged",
		NotifRootsListChanged: "notifications/roots/list_changed", NotifElicitationComplete: "notifications/elicitation/complete",
		NotifTasksStatus: "notifications/tasks/status", NotifTasks: "notifications/tasks",
	}
	if len(consts) != 36 {
		t.Fatalf("duplicate method constant values: %d distinct", len(consts))
	}
	for got, want := range consts {
		if got != want {
			t.Errorf("constant %q != %q", got, want)
		}
		if !KnownMethod(got) {
			t.Errorf("constant %q missing from the method table", got)
		}
	}
	if len(methodRows) != len(consts) {
		t.Errorf("methodRows has %d rows, constants %d", len(methodRows), len(consts))
	}
}

func TestUnknownMethods(t *testing.T) {
	for _, m := range []string{"", "TOOLS/CALL", "Tools/list", "tools/call ", "foo/bar", "notifications/foo", "tasks/", "rpc.discover"} {
		if KnownMethod(m) || MethodInEra(m, EraLegacy) || MethodInEra(m, EraModern) ||
			ServerMethodInEra(m, EraLegacy) || ServerMethodInEra(m, EraModern) ||
			RemovedInModern(m) || ModernOnly(m) || MayReturnInputRequired(m) || NameParam(m) != "" ||
			IsServerToClientRequest(m) || IsInputRequestMethod(m) || RequiredServerCapability(m) != "" ||
			CacheableMethod(m) || PaginatedMethod(m) || TasksExtensionMethod(m) {
			t.Errorf("unknown method %q matched a rule", m)
		}
	}
}

func TestMethodInRevision(t *testing.T) {
	tests := []struct {
		method, rev string
		client      bool
		server      bool
	}{
		{"initialize", "2024-11-05", true, false},
		{"initialize", "2025-11-25", true, false},
		{"initialize", "2026-07-28", false, false},
		{"server/discover", "2025-11-25", false, false},
		{"server/discover", "2026-07-28", true, false},
		{"tools/call", "2024-11-05", true, false},
		{"tools/call", "2026-07-28", true, false},
		{"tasks/get", "2025-06-18", false, false},
		{"tasks/get", "2025-11-25", true, true},
		{"tasks/get", "2026-07-28", false, false},
		{"notifications/tasks/status", "2025-11-25", true, true},
		{"notifications/tasks/status", "2025-06-18", false, false},
		{"elicitation/create", "2025-03-26", false, false},
		{"elicitation/create", "2025-06-18", false, true},
		{"elicitation/create", "2026-07-28", false, false},
		{"notifications/elicitation/complete", "2025-06-18", false, false},
		{"notifications/elicitation/complete", "2025-11-25", false, true},
		{"sampling/createMessage", "2024-11-05", false, true},
		{"ping", "2025-11-25", true, true},
		{"ping", "2026-07-28", false, false},
		{"notifications/progress", "2026-07-28", false, true},
		{"notifications/progress", "2025-03-26", true, true},
		{"notifications/subscriptions/acknowledged", "2026-07-28", false, true},
		{"tools/call", "2027-01-01", false, false},
		{"tools/call", "", false, false},
	}
	for _, tt := range tests {
		if got := MethodInRevision(tt.method, tt.rev); got != tt.client {
			t.Errorf("MethodInRevision(%q, %q) = %v", tt.method, tt.rev, got)
		}
		if got := ServerMethodInRevision(tt.method, tt.rev); got != tt.server {
			t.Errorf("ServerMethodInRevision(%q, %q) = %v", tt.method, tt.rev, got)
		}
	}
}

func TestTasksExtension(t *testing.T) {
	for m, want := range map[string]bool{
		"tasks/get": true, "tasks/update": true, "tasks/cancel": true,
		"tasks/result": false, "tasks/list": false, "tools/call": false,
	} {
		if got := TasksExtensionMethod(m); got != want {
			t.Errorf("TasksExtensionMethod(%q) = %v", m, got)
		}
	}
	if NameParamTaskID != "taskId" || NameParamName != "name" || NameParamURI != "uri" {
		t.Fatal("name param constants changed")
	}
}

// TestModernSetMatchesSpec checks the modern client→server set against the 2026-07-28 method list exactly.
func TestModernSetMatchesSpec(t *testing.T) {
	want := map[string]bool{
		"server/discover": true, "tools/list": true, "tools/call": true, "prompts/list": true,
		"prompts/get": true, "resources/list": true, "resources/templates/list": true,
		"resources/read": true, "completion/complete": true, "subscriptions/listen": true,
		"notifications/cancelled": true,
	}
	for _, r := range methodRows {
		if got := MethodInEra(r.method, EraModern); got != want[r.method] {
			t.Errorf("MethodInEra(%q, modern) = %v", r.method, got)
		}
	}
	removed := []string{"initialize", "notifications/initialized", "ping", "logging/setLevel",
		"resources/subscribe", "resources/unsubscribe", "notifications/roots/list_changed",
		"notifications/elicitation/complete", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
		"notifications/tasks/status"}
	for _, m := range removed {
		if !RemovedInModern(m) {
			t.Errorf("RemovedInModern(%q) = false", m)
		}
	}
}

func TestRouteOf(t *testing.T) {
	tests := []struct {
		method string
		want   Route
	}{
		{MethodToolsList, RouteList},
		{MethodPromptsList, RouteList},
		{MethodResourcesList, RouteList},
		{MethodResourcesTemplatesList, RouteList},
		{MethodToolsCall, RouteCallTool},
		{MethodPromptsGet, RouteGetPrompt},
		{MethodResourcesRead, RouteReadResource},
		{MethodCompletionComplete, RouteComplete},
		{MethodDiscover, RouteDiscover},
		{MethodLoggingSetLevel, RouteSetLevel},
		// Answered by a front's session, or not at all.
		{MethodInitialize, RouteNone},
		{MethodPing, RouteNone},
		{MethodResourcesSubscribe, RouteNone},
		{MethodSubscriptionsListen, RouteNone},
		{MethodTasksList, RouteNone},
		{MethodTasksGet, RouteNone},
		{MethodRootsList, RouteNone},
		{NotifCancelled, RouteNone},
		{"tools/unknown", RouteNone},
		{"", RouteNone},
	}
	for _, tt := range tests {
		if got := RouteOf(tt.method); got != tt.want {
			t.Errorf("RouteOf(%q) = %d, want %d", tt.method, got, tt.want)
		}
	}
}
