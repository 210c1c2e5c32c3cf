package gateway

// Running is the number of subscriptions/listen streams and legacy follows
// running now, on any generation's gateway. For metrics, read when scraped.
func (ls *Listens) Running() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.runs)
}

// RunningByServer is, by server name, the number of listens running now
// (as Running counts them) that hold an upstream listener on that server:
// a listen over several servers counts once for each, and one that needed
// no upstream listener counts for none. For the admin UI, read when asked.
func (ls *Listens) RunningByServer() map[string]int {
	ls.mu.Lock()
	runs := make([]*listenRun, 0, len(ls.runs))
	for r := range ls.runs {
		runs = append(runs, r)
	}
	ls.mu.Unlock()
	out := make(map[string]int)
	for _, r := range runs {
		_, targets := r.current()
		counted := make(map[string]bool, len(targets))
		for _, t := range targets {
			if t.server == nil || counted[t.server.Name] {
				continue
			}
			counted[t.server.Name] = true
			out[t.server.Name]++
		}
	}
	return out
}
