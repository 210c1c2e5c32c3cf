package upstream

// OpenSessions is the number of upstream sessions the client holds now:
// pooled ones (idle or in use) and ephemeral ones in use. For metrics, read
// when scraped.
func (c *Client) OpenSessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions) + len(c.own)
}
