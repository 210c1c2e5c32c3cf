package config

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ParseServer reads one server given as mcp_servers.<name>'s fields (the YAML keys, with
// JSON-compatible values), with the rules, messages and os.environ/NAME resolution of a
// server in a file: file is the running file's config (nil: none), whose
// environment_variables references see first, as they do in the file, and whose guardrails
// the server's guardrails may name. The servers kept in the store go through it, so a stored
// server is valid exactly when the same entry in the file would be. Only the problems that
// are errors are returned (their lines mean nothing here); the error is non-nil with them.
func ParseServer(name string, fields map[string]any, file *Config, opts Options) (Server, []Problem, error) {
	doc := map[string]any{
		"general_settings": map[string]any{"store_model_in_db": true},
		"mcp_servers":      map[string]any{name: fields},
	}
	opts.standalone, opts.fileGuardrails = true, nil
	if file != nil {
		if len(file.EnvironmentVariables) > 0 {
			doc["environment_variables"] = file.EnvironmentVariables
		}
		opts.fileGuardrails = file.Guardrails
	}
	data, err := json.Marshal(doc) // JSON is YAML
	if err != nil {
		return Server{}, nil, fmt.Errorf("config: server %q: %w", name, err)
	}
	cfg, problems, err := Parse(data, opts)
	problems = slices.DeleteFunc(problems, func(p Problem) bool { return p.Severity != SeverityError })
	if err != nil {
		return Server{}, problems, err
	}
	if len(cfg.Servers) != 1 {
		return Server{}, nil, fmt.Errorf("config: server %q: want one server, read %d", name, len(cfg.Servers))
	}
	s := cfg.Servers[0]
	s.Line, s.CommandLine = 0, 0
	return s, nil, nil
}

// RouteConflict returns a message when a server's name, server_id or alias is already a
// route (a name, server_id or alias) of one of servers; "" when none is.
func RouteConflict(s Server, servers []Server) string {
	routes := Routes(servers)
	for _, k := range []struct{ field, v string }{{"server_name", s.Name}, {"server_id", s.ServerID}, {"alias", s.Alias}} {
		if k.v == "" {
			continue
		}
		if other, taken := routes[k.v]; taken {
			return fmt.Sprintf("%s %q is already the name, server_id or alias of server %q", k.field, k.v, other)
		}
	}
	return ""
}
