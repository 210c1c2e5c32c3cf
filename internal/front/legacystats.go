package front

// LegacyStreams is what the legacy state holds now, for metrics read when
// scraped.
type LegacyStreams struct {
	// Sessions is the legacy (handshake-era) sessions live on this replica.
	Sessions int
	// GetStreams is those sessions' standalone GET streams open now.
	GetStreams int
	// SSEStreams is the /mcp/sse (HTTP+SSE transport) streams open now.
	SSEStreams int
}

// Streams counts the live sessions, their GET streams and the /mcp/sse
// streams. It walks the live sessions (at most max_sessions of them)
// outside the sessions' lock, taking each one's own lock in turn.
func (l *Legacy) Streams() LegacyStreams {
	ss := l.sessions
	ss.mu.Lock()
	lives := make([]*live, 0, len(ss.live))
	for _, e := range ss.live {
		lives = append(lives, e.Value.(*live))
	}
	ss.mu.Unlock()
	st := LegacyStreams{Sessions: len(lives)}
	for _, lv := range lives {
		lv.inflight.mu.Lock()
		if lv.stream != nil {
			st.GetStreams++
		}
		lv.inflight.mu.Unlock()
	}
	l.sseConns.mu.Lock()
	st.SSEStreams = len(l.sseConns.conns)
	l.sseConns.mu.Unlock()
	return st
}
