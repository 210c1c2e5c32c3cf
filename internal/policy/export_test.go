package policy

// Lookup is a test view of the name, id and alias index.

// Lookup returns a copy of the server whose name, id or alias is key, in that order of
// precedence (a name beats another server's id, an id beats another server's alias).
func (p *Policy) Lookup(key string) (Server, bool) {
	if i, ok := p.lookup(key); ok {
		return cloneServer(p.servers[i]), true
	}
	return Server{}, false
}
