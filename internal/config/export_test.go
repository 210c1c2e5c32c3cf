package config

import "slices"

// HasErrors reports whether any problem is an error.
func HasErrors(problems []Problem) bool {
	return slices.ContainsFunc(problems, func(p Problem) bool { return p.Severity == SeverityError })
}

// Server returns the configured server whose name, server_id or alias is key, with the
// precedence of Routes.
func (c *Config) Server(key string) (*Server, bool) {
	name, ok := Routes(c.Servers)[key]
	if !ok {
		return nil, false
	}
	for i := range c.Servers {
		if c.Servers[i].Name == name {
			return &c.Servers[i], true
		}
	}
	return nil, false
}
