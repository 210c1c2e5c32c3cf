package app

import (
	"net/url"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/policy"
)

// compileRules compiles general_settings.mcp_policies once for a
// configuration, with what the server variable holds for each server.
func compileRules(cfg *config.Config, reg *registry) (*policy.Rules, error) {
	if len(cfg.General.MCPPolicies) == 0 {
		return nil, nil
	}
	specs := make([]policy.RuleSpec, len(cfg.General.MCPPolicies))
	for i, r := range cfg.General.MCPPolicies {
		specs[i] = r.Spec()
	}
	facts := make([]policy.ServerFacts, len(reg.servers))
	for i, s := range reg.servers {
		f := policy.ServerFacts{Name: s.Name, ID: s.ServerID, Alias: s.Alias, Transport: string(s.Transport), Era: s.ProtocolVersion}
		if s.SpecPath != "" {
			f.Transport = "openapi"
		}
		if u, err := url.Parse(s.URL); err == nil && s.URL != "" {
			f.Host = u.Host
		}
		facts[i] = f
	}
	return policy.CompileRules(specs, facts)
}
