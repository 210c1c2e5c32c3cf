package gateway

// Running is the number of subscriptions/listen streams and legacy follows
// running now, on any generation's gateway. For metrics, read when scraped.
func (ls *Listens) Running() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.runs)
}
