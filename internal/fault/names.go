package fault

// names are the classes' names as the fault table (doc.go) writes them.
var names = [numClasses]string{
	InvalidParams: "invalid_params", MethodNotFound: "method_not_found", HeaderMismatch: "header_mismatch",
	UnknownTool: "unknown_tool", UnknownPrompt: "unknown_prompt", ResourceNotFound: "resource_not_found",
	MissingCapability: "missing_capability", TargetRevoked: "target_revoked", AuthRequired: "auth_required",
	Forbidden: "forbidden", Timeout: "timeout", Unreachable: "unreachable", UpstreamError: "upstream_error",
	RateLimited: "rate_limited", Unavailable: "unavailable", UpstreamInternal: "upstream_internal",
	UpstreamRPC: "upstream_rpc", Relay: "relay", Internal: "internal", LimitExceeded: "limit_exceeded",
	LimitsUnavailable: "limits_unavailable",
}

// String is the class's name as the fault table writes it ("timeout",
// "limit_exceeded"); "" for the zero Class or one out of range.
func (c Class) String() string {
	if int(c) >= len(names) {
		return ""
	}
	return names[c]
}
