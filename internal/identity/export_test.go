package identity

// len reports the number of remembered refusals, expired ones included.
func (c *negCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
