package mcp

// Request methods.
const (
	// MethodInitialize opens a legacy session (removed in 2026-07-28).
	MethodInitialize = "initialize"
	// MethodPing is the legacy liveness request, sent in both directions (removed in 2026-07-28).
	MethodPing = "ping"
	// MethodDiscover returns a modern server's versions and capabilities.
	MethodDiscover = "server/discover"
	// MethodToolsList lists tools (paginated, cacheable in the modern era).
	MethodToolsList = "tools/list"
	// MethodToolsCall calls a tool; Mcp-Name mirrors params.name.
	MethodToolsCall = "tools/call"
	// MethodPromptsList lists prompts (paginated, cacheable in the modern era).
	MethodPromptsList = "prompts/list"
	// MethodPromptsGet renders a prompt; Mcp-Name mirrors params.name.
	MethodPromptsGet = "prompts/get"
	// MethodResourcesList lists resources (paginated, cacheable in the modern era).
	MethodResourcesList = "resources/list"
	// MethodResourcesTemplatesList lists resource templates (paginated, cacheable in the modern era).
	MethodResourcesTemplatesList = "resources/templates/list"
	// MethodResourcesRead reads a resource; Mcp-Name mirrors params.uri.
	MethodResourcesRead = "resources/read"
	// MethodResourcesSubscribe subscribes to a resource in a legacy session (removed in 2026-07-28).
	MethodResourcesSubscribe = "resources/subscribe"
	// MethodResourcesUnsubscribe ends a legacy resource subscription (removed in 2026-07-28).
	MethodResourcesUnsubscribe = "resources/unsubscribe"
	// MethodCompletionComplete asks for argument completions.
	MethodCompletionComplete = "completion/complete"
	// MethodLoggingSetLevel sets the legacy session log level (removed in 2026-07-28).
	MethodLoggingSetLevel = "logging/setLevel"
	// MethodSubscriptionsListen opens a modern notification stream.
	MethodSubscriptionsListen = "subscriptions/listen"
	// MethodElicitationCreate asks the user for input (legacy server→client request; modern InputRequest).
	MethodElicitationCreate = "elicitation/create"
	// MethodSamplingCreateMessage asks the client's LLM for a completion (legacy server→client request; modern InputRequest).
	MethodSamplingCreateMessage = "sampling/createMessage"
	// MethodRootsList asks the client for its roots (legacy server→client request; modern InputRequest).
	MethodRootsList = "roots/list"
	// MethodTasksGet polls a task (2025-11-25 core; tasks extension in the modern era).
	MethodTasksGet = "tasks/get"
	// MethodTasksResult fetches a finished task's result (2025-11-25 core only).
	MethodTasksResult = "tasks/result"
	// MethodTasksList lists tasks (2025-11-25 core only).
	MethodTasksList = "tasks/list"
	// MethodTasksCancel cancels a task (2025-11-25 core; tasks extension in the modern era).
	MethodTasksCancel = "tasks/cancel"
	// MethodTasksUpdate supplies inputResponses to a task (modern tasks extension only).
	MethodTasksUpdate = "tasks/update"
)

// Notification methods.
const (
	// MethodInitialized completes the legacy handshake (removed in 2026-07-28).
	MethodInitialized = "notifications/initialized"
	// NotifCancelled cancels a request (stdio in the modern era) or ends a listen stream.
	NotifCancelled = "notifications/cancelled"
	// NotifProgress reports progress for a request carrying a progressToken.
	NotifProgress = "notifications/progress"
	// NotifMessage carries a log message (deprecated logging feature).
	NotifMessage = "notifications/message"
	// NotifToolsListChanged says the tool list changed.
	NotifToolsListChanged = "notifications/tools/list_changed"
	// NotifPromptsListChanged says the prompt list changed.
	NotifPromptsListChanged = "notifications/prompts/list_changed"
	// NotifResourcesListChanged says the resource list changed.
	NotifResourcesListChanged = "notifications/resources/list_changed"
	// NotifResourcesUpdated says a subscribed resource changed.
	NotifResourcesUpdated = "notifications/resources/updated"
	// NotifSubscriptionsAcknowledged is the first message of a modern listen stream.
	NotifSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	// NotifRootsListChanged says the client's roots changed (legacy only).
	NotifRootsListChanged = "notifications/roots/list_changed"
	// NotifElicitationComplete ends a URL-mode elicitation (2025-11-25 only).
	NotifElicitationComplete = "notifications/elicitation/complete"
	// NotifTasksStatus reports a task status change (2025-11-25 core only).
	NotifTasksStatus = "notifications/tasks/status"
	// NotifTasks pushes a full task on a listen stream (modern tasks extension only).
	NotifTasks = "notifications/tasks"
)

// Parameter names mirrored into the Mcp-Name header.
const (
	// NameParamName is the params member mirrored by Mcp-Name for tools/call and prompts/get.
	NameParamName = "name"
	// NameParamURI is the params member mirrored by Mcp-Name for resources/read.
	NameParamURI = "uri"
	// NameParamTaskID is the params member mirrored by Mcp-Name for tasks-extension methods.
	NameParamTaskID = "taskId"
)

// Server capability keys (the members of ServerCapabilities).
const (
	// CapTools is the server capability gating tools/*.
	CapTools = "tools"
	// CapPrompts is the server capability gating prompts/*.
	CapPrompts = "prompts"
	// CapResources is the server capability gating resources/*.
	CapResources = "resources"
	// CapCompletions is the server capability gating completion/complete.
	CapCompletions = "completions"
	// CapLogging is the server capability gating logging (deprecated feature).
	CapLogging = "logging"
	// CapExperimental holds non-standard capabilities on both sides.
	CapExperimental = "experimental"
	// CapExtensions holds negotiated extensions on both sides (modern era).
	CapExtensions = "extensions"
	// CapTasks is the 2025-11-25 core tasks capability on both sides (removed in 2026-07-28).
	CapTasks = "tasks"
	// CapRoots is the client capability needed for roots/list.
	CapRoots = "roots"
	// CapSampling is the client capability needed for sampling/createMessage.
	CapSampling = "sampling"
	// CapElicitation is the client capability needed for elicitation/create.
	CapElicitation = "elicitation"
)

// Route is how the gateway's core serves a client→server request; the
// routers switch on it instead of on method names.
type Route uint8

// Routes.
const (
	// RouteNone: the core serves no such request (a front answers it, or -32601).
	RouteNone Route = iota
	// RouteList: an aggregated, paginated list (tools, prompts, resources, resource templates).
	RouteList
	// RouteCallTool: tools/call.
	RouteCallTool
	// RouteGetPrompt: prompts/get.
	RouteGetPrompt
	// RouteReadResource: resources/read.
	RouteReadResource
	// RouteComplete: completion/complete.
	RouteComplete
	// RouteDiscover: server/discover.
	RouteDiscover
	// RouteSetLevel: logging/setLevel.
	RouteSetLevel
)

// methodSpec is one row of the method table. Directions are about who sends the message.
type methodSpec struct {
	known         bool
	clientLegacy  bool   // client→server request or notification in some legacy revision
	clientModern  bool   // client→server request or notification in 2026-07-28 core
	serverLegacy  bool   // server→client request or notification in some legacy revision
	serverModern  bool   // server→client notification in 2026-07-28 core
	since         string // first legacy revision that has it; "" means all of them
	inputRequired bool   // may answer with an InputRequiredResult (modern)
	nameParam     string // params member mirrored by Mcp-Name
	serverCap     string // server capability that gates it
	cacheable     bool   // complete result carries ttlMs/cacheScope (modern)
	paginated     bool   // takes a cursor and returns nextCursor
	serverRequest bool   // a server→client JSON-RPC request in the legacy era
	inputRequest  string // client capability it needs as a modern InputRequest
	route         Route  // how the core serves it as a client→server request
}

// specOf is the single source of truth for the method table: which era and
// direction has each method, and what the gateway needs to know to serve it.
func specOf(method string) methodSpec {
	switch method {
	// Lifecycle.
	case MethodInitialize:
		return methodSpec{known: true, clientLegacy: true}
	case MethodInitialized:
		return methodSpec{known: true, clientLegacy: true}
	case MethodPing:
		return methodSpec{known: true, clientLegacy: true, serverLegacy: true, serverRequest: true}
	case MethodDiscover:
		return methodSpec{known: true, clientModern: true, cacheable: true, route: RouteDiscover}

	// Tools, prompts, resources, completion.
	case MethodToolsList:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapTools, cacheable: true, paginated: true, route: RouteList}
	case MethodToolsCall:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapTools, inputRequired: true, nameParam: NameParamName, route: RouteCallTool}
	case MethodPromptsList:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapPrompts, cacheable: true, paginated: true, route: RouteList}
	case MethodPromptsGet:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapPrompts, inputRequired: true, nameParam: NameParamName, route: RouteGetPrompt}
	case MethodResourcesList:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapResources, cacheable: true, paginated: true, route: RouteList}
	case MethodResourcesTemplatesList:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapResources, cacheable: true, paginated: true, route: RouteList}
	case MethodResourcesRead:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapResources, inputRequired: true, nameParam: NameParamURI, cacheable: true, route: RouteReadResource}
	case MethodResourcesSubscribe, MethodResourcesUnsubscribe:
		return methodSpec{known: true, clientLegacy: true, serverCap: CapResources}
	case MethodCompletionComplete:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverCap: CapCompletions, route: RouteComplete}
	case MethodLoggingSetLevel:
		return methodSpec{known: true, clientLegacy: true, serverCap: CapLogging, route: RouteSetLevel}
	case MethodSubscriptionsListen:
		return methodSpec{known: true, clientModern: true}

	// Former server→client requests.
	case MethodElicitationCreate:
		return methodSpec{known: true, serverLegacy: true, since: V20250618, serverRequest: true, inputRequest: CapElicitation}
	case MethodSamplingCreateMessage:
		return methodSpec{known: true, serverLegacy: true, serverRequest: true, inputRequest: CapSampling}
	case MethodRootsList:
		return methodSpec{known: true, serverLegacy: true, serverRequest: true, inputRequest: CapRoots}

	// 2025-11-25 core tasks (either side may be the task receiver).
	case MethodTasksGet, MethodTasksResult, MethodTasksCancel:
		return methodSpec{known: true, clientLegacy: true, serverLegacy: true, since: V20251125}
	case MethodTasksList:
		return methodSpec{known: true, clientLegacy: true, serverLegacy: true, since: V20251125, paginated: true}
	case NotifTasksStatus:
		return methodSpec{known: true, clientLegacy: true, serverLegacy: true, since: V20251125}
	case MethodTasksUpdate, NotifTasks:
		// Modern tasks extension only: not part of either era's core.
		return methodSpec{known: true}

	// Notifications.
	case NotifCancelled:
		return methodSpec{known: true, clientLegacy: true, clientModern: true, serverLegacy: true, serverModern: true}
	case NotifProgress:
		return methodSpec{known: true, clientLegacy: true, serverLegacy: true, serverModern: true}
	case NotifMessage:
		return methodSpec{known: true, serverLegacy: true, serverModern: true}
	case NotifToolsListChanged, NotifPromptsListChanged, NotifResourcesListChanged, NotifResourcesUpdated:
		return methodSpec{known: true, serverLegacy: true, serverModern: true}
	case NotifSubscriptionsAcknowledged:
		return methodSpec{known: true, serverModern: true}
	case NotifRootsListChanged:
		return methodSpec{known: true, clientLegacy: true}
	case NotifElicitationComplete:
		return methodSpec{known: true, serverLegacy: true, since: V20251125}
	}
	return methodSpec{}
}

// MethodInEra reports whether a client may send method (request or notification) to a server of the given era.
func MethodInEra(method string, era Era) bool {
	s := specOf(method)
	switch era {
	case EraLegacy:
		return s.clientLegacy
	case EraModern:
		return s.clientModern
	}
	return false
}

// MethodInRevision reports whether a client may send method under the exact known revision; false for unknown revisions.
func MethodInRevision(method, revision string) bool {
	if !IsKnownRevision(revision) {
		return false
	}
	s := specOf(method)
	if IsModern(revision) {
		return s.clientModern
	}
	return s.clientLegacy && (s.since == "" || revision >= s.since)
}

// RouteOf returns how the core serves method as a client→server request.
func RouteOf(method string) Route { return specOf(method).route }

// MayReturnInputRequired reports whether a modern server may answer method with an InputRequiredResult.
func MayReturnInputRequired(method string) bool { return specOf(method).inputRequired }

// NameParam returns the params member that Mcp-Name mirrors for method ("name", "uri"), or "" when Mcp-Name is not sent.
// Tasks-extension methods are not covered here; see TasksExtensionMethod and NameParamTaskID.
func NameParam(method string) string { return specOf(method).nameParam }

// IsInputRequestMethod reports whether method may appear as an InputRequest in a modern InputRequiredResult.
func IsInputRequestMethod(method string) bool { return specOf(method).inputRequest != "" }

// InputRequestCapability returns the client capability an InputRequest method needs ("elicitation", "sampling", "roots"), or "".
func InputRequestCapability(method string) string { return specOf(method).inputRequest }

// RequiredServerCapability returns the server capability that gates method ("tools", "prompts", "resources", "completions", "logging"), or "".
func RequiredServerCapability(method string) string { return specOf(method).serverCap }

// CacheableMethod reports whether a modern complete result of method must carry ttlMs and cacheScope.
func CacheableMethod(method string) bool { return specOf(method).cacheable }
