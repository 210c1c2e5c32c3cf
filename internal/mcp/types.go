package mcp

import "encoding/json"

// Result types.
const (
	// ResultTypeComplete marks a final result; a result without resultType (pre-2026 server) means the same.
	ResultTypeComplete = "complete"
	// ResultTypeInputRequired marks an MRTR interim result (tools/call, prompts/get, resources/read only).
	ResultTypeInputRequired = "input_required"
	// ResultTypeTask marks a CreateTaskResult of the tasks extension.
	ResultTypeTask = "task"
)

// Cache scopes of a CacheableResult.
const (
	// CacheScopePublic results hold no user-specific data and may be shared across callers.
	CacheScopePublic = "public"
	// CacheScopePrivate results may be reused only within the same authorization context.
	CacheScopePrivate = "private"
)

// ValidCacheScope reports whether s is "public" or "private".
func ValidCacheScope(s string) bool { return s == CacheScopePublic || s == CacheScopePrivate }

// Extension identifiers used in capabilities.extensions.
const (
	// ExtensionTasks is the tasks extension (the modern home of tasks/get, tasks/update, tasks/cancel).
	ExtensionTasks = "io.modelcontextprotocol/tasks"
	// ExtensionUI is the MCP Apps extension.
	ExtensionUI = "io.modelcontextprotocol/ui"
)

// Elicitation modes declared under ClientCapabilities.elicitation.
const (
	// ElicitationModeForm is form-mode elicitation (the default when elicitation is {}).
	ElicitationModeForm = "form"
	// ElicitationModeURL is URL-mode elicitation.
	ElicitationModeURL = "url"
)

// Implementation identifies a client or server (clientInfo, serverInfo). Unknown members are kept in Extra.
type Implementation struct {
	// Name is the required programmatic name.
	Name string `json:"name"`
	// Version is the required version string.
	Version string `json:"version"`
	// Title is an optional display name.
	Title string `json:"title,omitempty"`
	// Description is an optional human-readable description.
	Description string `json:"description,omitempty"`
	// WebsiteURL is an optional home page.
	WebsiteURL string `json:"websiteUrl,omitempty"`
	// Icons is the optional icon list, kept raw.
	Icons json.RawMessage `json:"icons,omitempty"`
	// Extra holds members this package does not know, written back on marshal.
	Extra map[string]json.RawMessage `json:"-"`
}

type implementationFields Implementation

// MarshalJSON encodes the known members followed by Extra.
func (v Implementation) MarshalJSON() ([]byte, error) {
	return encodeObject(implementationFields(v), v.Extra)
}

// UnmarshalJSON decodes with exact member names and keeps unknown members in Extra; null is a no-op.
func (v *Implementation) UnmarshalJSON(data []byte) error {
	if isJSONNull(data) {
		return nil
	}
	var f implementationFields
	extra, err := decodeObject(data, &f, "Implementation")
	if err != nil {
		return err
	}
	f.Extra = extra
	*v = Implementation(f)
	return nil
}

func (v Implementation) isZero() bool {
	return v.Name == "" && v.Version == "" && v.Title == "" && v.Description == "" &&
		v.WebsiteURL == "" && len(v.Icons) == 0 && len(v.Extra) == 0
}

// ServerCapabilities is what a server advertises (initialize result, discover result).
// Every capability is kept raw; one is present when its key is present and not null (even {}).
type ServerCapabilities struct {
	// Experimental holds non-standard capabilities.
	Experimental json.RawMessage `json:"experimental,omitempty"`
	// Logging advertises log message support (deprecated feature).
	Logging json.RawMessage `json:"logging,omitempty"`
	// Completions advertises completion/complete.
	Completions json.RawMessage `json:"completions,omitempty"`
	// Prompts advertises prompts/* ({listChanged?}).
	Prompts json.RawMessage `json:"prompts,omitempty"`
	// Resources advertises resources/* ({subscribe?, listChanged?}).
	Resources json.RawMessage `json:"resources,omitempty"`
	// Tools advertises tools/* ({listChanged?}).
	Tools json.RawMessage `json:"tools,omitempty"`
	// Extensions maps extension identifiers to settings objects (modern era).
	Extensions json.RawMessage `json:"extensions,omitempty"`
	// Tasks is the 2025-11-25 core tasks capability (legacy only).
	Tasks json.RawMessage `json:"tasks,omitempty"`
	// Extra holds members this package does not know, written back on marshal.
	Extra map[string]json.RawMessage `json:"-"`
}

type serverCapabilitiesFields ServerCapabilities

// MarshalJSON encodes the known members followed by Extra.
func (c ServerCapabilities) MarshalJSON() ([]byte, error) {
	return encodeObject(serverCapabilitiesFields(c), c.Extra)
}

// UnmarshalJSON decodes with exact member names and keeps unknown members in Extra; null is a no-op.
func (c *ServerCapabilities) UnmarshalJSON(data []byte) error {
	if isJSONNull(data) {
		return nil
	}
	var f serverCapabilitiesFields
	extra, err := decodeObject(data, &f, "ServerCapabilities")
	if err != nil {
		return err
	}
	f.Extra = extra
	*c = ServerCapabilities(f)
	return nil
}

// Has reports whether the capability with the given key (e.g. "tools", see RequiredServerCapability) is present.
func (c ServerCapabilities) Has(name string) bool {
	switch name {
	case CapExperimental:
		return present(c.Experimental)
	case CapLogging:
		return present(c.Logging)
	case CapCompletions:
		return present(c.Completions)
	case CapPrompts:
		return present(c.Prompts)
	case CapResources:
		return present(c.Resources)
	case CapTools:
		return present(c.Tools)
	case CapExtensions:
		return present(c.Extensions)
	case CapTasks:
		return present(c.Tasks)
	}
	return present(c.Extra[name])
}

// HasTools reports whether the tools capability is present.
func (c ServerCapabilities) HasTools() bool { return present(c.Tools) }

// HasPrompts reports whether the prompts capability is present.
func (c ServerCapabilities) HasPrompts() bool { return present(c.Prompts) }

// HasResources reports whether the resources capability is present.
func (c ServerCapabilities) HasResources() bool { return present(c.Resources) }

// HasCompletions reports whether the completions capability is present.
func (c ServerCapabilities) HasCompletions() bool { return present(c.Completions) }

// HasLogging reports whether the logging capability is present.
func (c ServerCapabilities) HasLogging() bool { return present(c.Logging) }

// HasExtension reports whether extensions[id] is present.
func (c ServerCapabilities) HasExtension(id string) bool {
	_, ok := member(c.Extensions, id)
	return ok
}

// ToolsListChanged reports whether tools.listChanged is true.
func (c ServerCapabilities) ToolsListChanged() bool { return flag(c.Tools, "listChanged") }

// PromptsListChanged reports whether prompts.listChanged is true.
func (c ServerCapabilities) PromptsListChanged() bool { return flag(c.Prompts, "listChanged") }

// ResourcesListChanged reports whether resources.listChanged is true.
func (c ServerCapabilities) ResourcesListChanged() bool { return flag(c.Resources, "listChanged") }

// ResourcesSubscribe reports whether resources.subscribe is true.
func (c ServerCapabilities) ResourcesSubscribe() bool { return flag(c.Resources, "subscribe") }

// flag reports whether raw is an object whose member key is the literal true.
func flag(raw json.RawMessage, key string) bool {
	v, ok := member(raw, key)
	return ok && string(trimJSONSpace(v)) == "true"
}

// InitializeResult is the result of a legacy initialize request.
type InitializeResult struct {
	// ProtocolVersion is the revision the server chose.
	ProtocolVersion string `json:"protocolVersion"`
	// Capabilities are the server's capabilities for the session.
	Capabilities ServerCapabilities `json:"capabilities"`
	// ServerInfo identifies the server.
	ServerInfo Implementation `json:"serverInfo"`
	// Instructions is optional guidance for the model.
	Instructions string `json:"instructions,omitempty"`
	// Meta is the optional result _meta.
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
	// Extra holds members this package does not know, written back on marshal.
	Extra map[string]json.RawMessage `json:"-"`
}

type initializeResultFields InitializeResult

// MarshalJSON encodes the known members followed by Extra.
func (r InitializeResult) MarshalJSON() ([]byte, error) {
	return encodeObject(initializeResultFields(r), r.Extra)
}

// UnmarshalJSON decodes with exact member names and keeps unknown members in Extra; null is a no-op.
func (r *InitializeResult) UnmarshalJSON(data []byte) error {
	if isJSONNull(data) {
		return nil
	}
	var f initializeResultFields
	extra, err := decodeObject(data, &f, "InitializeResult")
	if err != nil {
		return err
	}
	f.Extra = extra
	*r = InitializeResult(f)
	return nil
}

// DiscoverResult is the result of server/discover (a CacheableResult).
type DiscoverResult struct {
	// ResultType is "complete".
	ResultType string `json:"resultType"`
	// SupportedVersions lists the revisions the server implements (marshalled as [] when nil).
	SupportedVersions []string `json:"supportedVersions"`
	// Capabilities are the server's capabilities.
	Capabilities ServerCapabilities `json:"capabilities"`
	// Instructions is optional guidance for the model.
	Instructions string `json:"instructions,omitempty"`
	// TTLMs is the freshness hint in milliseconds; nil when absent (treat as 0, see TTL).
	TTLMs *int64 `json:"ttlMs"`
	// CacheScope is "public" or "private".
	CacheScope string `json:"cacheScope"`
	// Meta is the result _meta; it SHOULD carry MetaServerInfo.
	Meta map[string]json.RawMessage `json:"_meta,omitempty"`
	// Extra holds members this package does not know, written back on marshal.
	Extra map[string]json.RawMessage `json:"-"`
}

type discoverResultFields DiscoverResult

// MarshalJSON encodes the known members followed by Extra.
func (r DiscoverResult) MarshalJSON() ([]byte, error) {
	if r.SupportedVersions == nil {
		r.SupportedVersions = []string{}
	}
	return encodeObject(discoverResultFields(r), r.Extra)
}

// UnmarshalJSON decodes with exact member names and keeps unknown members in Extra; null is a no-op.
func (r *DiscoverResult) UnmarshalJSON(data []byte) error {
	if isJSONNull(data) {
		return nil
	}
	var f discoverResultFields
	extra, err := decodeObject(data, &f, "DiscoverResult")
	if err != nil {
		return err
	}
	f.Extra = extra
	*r = DiscoverResult(f)
	return nil
}

// TTL returns ttlMs, treating absent and negative values as 0.
func (r DiscoverResult) TTL() int64 {
	if r.TTLMs == nil || *r.TTLMs < 0 {
		return 0
	}
	return *r.TTLMs
}

// ServerInfo decodes _meta[MetaServerInfo]; ok is false when it is absent, null or malformed.
func (r DiscoverResult) ServerInfo() (info Implementation, ok bool) {
	raw := r.Meta[MetaServerInfo]
	if !isJSONObject(raw) || json.Unmarshal(raw, &info) != nil {
		return Implementation{}, false
	}
	return info, true
}

// ToInitializeResult synthesizes the legacy initialize answer for version from this discover result
// (serverInfo from _meta, capabilities and instructions as they are).
func (r DiscoverResult) ToInitializeResult(version string) InitializeResult {
	info, _ := r.ServerInfo()
	return InitializeResult{
		ProtocolVersion: version,
		Capabilities:    r.Capabilities,
		ServerInfo:      info,
		Instructions:    r.Instructions,
	}
}
