package mcp

import "encoding/json"

// MCP-specific JSON-RPC error codes (the generic JSON-RPC codes live in internal/jsonrpc).
const (
	// CodeHeaderMismatch: a required header is missing, malformed, or disagrees with the body (modern; HTTP 400).
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapability: the request did not declare a client capability it needs (modern; HTTP 400).
	CodeMissingClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the requested revision is not supported; data is UnsupportedVersionData (modern; HTTP 400).
	CodeUnsupportedProtocolVersion = -32022
	// CodeResourceNotFoundLegacy is the 2025-11-25-and-earlier resource-not-found code; modern servers use -32602.
	CodeResourceNotFoundLegacy = -32002
	// CodeURLElicitationRequiredLegacy is the 2025-11-25-only URL-elicitation-required code; never sent to modern clients.
	CodeURLElicitationRequiredLegacy = -32042
)

// IsModernErrorCode reports whether code is one of the codes only a modern server sends (-32020, -32021, -32022).
// The other modern signal, -32601 with HTTP 404, needs the status and is judged by the caller.
func IsModernErrorCode(code int64) bool {
	switch code {
	case CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return true
	}
	return false
}

// UnsupportedVersionData is error.data of -32022 (and of the legacy -32602 version error).
type UnsupportedVersionData struct {
	// Supported lists the revisions the server implements.
	Supported []string `json:"supported"`
	// Requested is the revision the client asked for.
	Requested string `json:"requested"`
}

// MissingCapabilityData is error.data of -32021.
type MissingCapabilityData struct {
	// RequiredCapabilities maps each client capability the request lacked to
	// the settings it needs ({} for the capability itself).
	RequiredCapabilities map[string]json.RawMessage `json:"requiredCapabilities"`
}

// ResourceNotFoundData is the conventional error.data of a resource-not-found error.
type ResourceNotFoundData struct {
	// URI is the resource that was not found.
	URI string `json:"uri"`
}
