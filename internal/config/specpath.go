package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// specPathKey reads spec_path (an OpenAPI 3 document served as tools; see internal/openapimcp)
// and reports whether key was it.
func (l *loader) specPathKey(ps *parsedServer, key string, v *yaml.Node, field string) bool {
	if key != "spec_path" {
		return false
	}
	if s, ok := l.str(v, field); ok {
		ps.SpecPath = strings.TrimSpace(s)
		ps.SpecPathLine = lineOf(v)
	}
	return true
}

// checkSpecPath checks an OpenAPI server: its url (required, as in LiteLLM) is the API's base
// URL and its transport http, the default. The document itself is read when the gateway builds
// the server's client, not here (the loader reads no other file).
func (l *loader) checkSpecPath(ps *parsedServer, prefix string) {
	s := &ps.Server
	if s.SpecPath == "" {
		return
	}
	if s.Transport != TransportHTTP {
		l.errorAt(s.SpecPathLine, "%s.spec_path needs transport http (the default), not %s", prefix, s.Transport)
	}
	if lower := strings.ToLower(s.SpecPath); strings.HasPrefix(lower, "http:") || strings.HasPrefix(lower, "https:") {
		if !isHTTPURL(s.SpecPath) {
			l.errorAt(s.SpecPathLine, "%s.spec_path must be a file path or an absolute http(s) URL", prefix)
		}
	}
}
