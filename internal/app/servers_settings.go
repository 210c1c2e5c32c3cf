package app

import (
	"net/http"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
	"github.com/mcpgw/mcpgw/internal/store"
)

// applySettings writes a request's settings (those LiteLLM's table has no column for) into
// st: every one when set reports true for every field (creating), else those the request sets.
func applySettings(st *store.ServerSettings, spec front.ServerSettingsSpec, set func(string) bool) {
	for _, f := range []struct {
		name string
		dst  *string
		v    string
	}{{"spec_path", &st.SpecPath, spec.SpecPath}, {"protocol_version", &st.ProtocolVersion, spec.ProtocolVersion},
		{"forward_identity", &st.ForwardIdentity, spec.ForwardIdentity}} {
		if set(f.name) {
			*f.dst = f.v
		}
	}
	for _, f := range []struct {
		name string
		dst  *bool
		v    bool
	}{{"allow_elicitation", &st.AllowElicitation, spec.AllowElicitation}, {"allow_sampling", &st.AllowSampling, spec.AllowSampling},
		{"pin_tool_definitions", &st.PinToolDefinitions, spec.PinToolDefinitions}} {
		if set(f.name) {
			*f.dst = f.v
		}
	}
	if set("pinned_tools") {
		st.PinnedTools = spec.PinnedTools
	}
	if set("guardrails") {
		st.Guardrails = spec.Guardrails
	}
}

// settingsFields adds a stored server's settings to its mcp_servers fields (rowFields).
func settingsFields(f map[string]any, st store.ServerSettings) {
	for k, v := range map[string]string{"spec_path": st.SpecPath, "protocol_version": st.ProtocolVersion,
		"forward_identity": st.ForwardIdentity} {
		if v != "" {
			f[k] = v
		}
	}
	for k, v := range map[string]bool{"allow_elicitation": st.AllowElicitation, "allow_sampling": st.AllowSampling,
		"pin_tool_definitions": st.PinToolDefinitions} {
		if v {
			f[k] = true
		}
	}
	for k, v := range map[string][]string{"pinned_tools": st.PinnedTools, "guardrails": st.Guardrails} {
		if len(v) > 0 {
			f[k] = v
		}
	}
}

// normalizeSettings stores the settings as the config read them (s, parsed from row): the
// values trimmed, forward_identity's spellings (true, "none", ...) as "jwt" or unset.
func normalizeSettings(row *store.MCPServer, s config.Server) {
	st := &row.Settings
	st.SpecPath, st.ForwardIdentity = s.SpecPath, s.ForwardIdentity
	if st.ProtocolVersion != "" {
		st.ProtocolVersion = s.ProtocolVersion
	}
}

// apiSpecPath refuses a spec_path on a server stored through the API. A file path would have
// the API, reachable over the network, make the gateway read a file of its host (as it may not
// run an arbitrary program); and the document is read when a generation's clients are built,
// where a failure fails the whole Apply: a stored URL that stopped answering would then keep
// every later change, and the gateway's start, from applying. An OpenAPI server goes in the
// config file, whose reload reports such a failure without storing it.
func apiSpecPath(s config.Server) error {
	if s.SpecPath == "" {
		return nil
	}
	return &front.ServerError{Status: http.StatusBadRequest, Param: "spec_path",
		Msg: "spec_path: an OpenAPI server is configured in the config file's mcp_servers, not through the API " +
			"(its document is read when the gateway applies its config, and one that cannot be read would stop every later apply)"}
}

// settingsView fills v's settings from st (a stored server's).
func settingsView(v *front.MCPServerView, st store.ServerSettings) {
	v.SpecPath, v.ProtocolVersion, v.ForwardIdentity = opt(st.SpecPath), opt(protocolShown(st.ProtocolVersion)), opt(st.ForwardIdentity)
	v.AllowElicitation, v.AllowSampling, v.PinToolDefinitions = st.AllowElicitation, st.AllowSampling, st.PinToolDefinitions
	v.PinnedTools, v.Guardrails = st.PinnedTools, st.Guardrails
}

// fileSettingsView fills v's settings from a config file's server.
func fileSettingsView(v *front.MCPServerView, s config.Server) {
	settingsView(v, store.ServerSettings{SpecPath: s.SpecPath, ProtocolVersion: s.ProtocolVersion, ForwardIdentity: s.ForwardIdentity,
		AllowElicitation: s.AllowElicitation, AllowSampling: s.AllowSampling, PinToolDefinitions: s.PinToolDefinitions,
		PinnedTools: s.PinnedTools, Guardrails: s.Guardrails})
	if s.RPM > 0 {
		n := int64(s.RPM)
		v.RPM = &n
	}
}

// protocolShown is a protocol_version as answered: "" (unset) for auto, the default.
func protocolShown(p string) string {
	if p == config.ProtocolAuto {
		return ""
	}
	return p
}
