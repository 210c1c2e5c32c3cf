package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/admit"
)

// apiPrefixes are the gateway routes /ui/api/ reaches; anything else is 404.
var apiPrefixes = []string{
	"v1/mcp/", "mcp-rest/", "key/", "team/", "organization/", "user/", "spend/", "health/readiness",
}

// recheckEvery is how often an open activity stream re-checks its
// session's authority.
const recheckEvery = 10 * time.Second

// proxy serves /ui/api/<route> as the gateway's own <route>, called with
// the session's key: the management API with the signed-in identity and
// nothing else. A GET needs the session; any other method also needs the
// same origin and the session's CSRF token. Only the body, the query,
// Content-Type and Accept reach the route: no cookie, no header of the
// browser's choosing.
func (u *UI) proxy(w http.ResponseWriter, r *http.Request) {
	id, sess, _, ok := u.signedIn(r)
	if !ok {
		refuse(w, http.StatusUnauthorized, "not signed in")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !u.changeAllowed(w, r, sess, nil) {
		return
	}
	route := r.PathValue("path")
	if !allowedRoute(route) {
		refuse(w, http.StatusNotFound, "no such route")
		return
	}
	in := r.Clone(r.Context())
	in.URL.Path, in.URL.RawPath, in.RequestURI = "/"+route, "", ""
	in.Header = http.Header{}
	for _, h := range []string{"Content-Type", "Accept"} {
		if v := r.Header.Get(h); v != "" {
			in.Header.Set(h, v)
		}
	}
	u.cfg.API.ServeHTTP(w, u.actAs(in, id, sess))
}

func allowedRoute(route string) bool {
	if strings.Contains(route, "..") || strings.Contains(route, "//") {
		return false
	}
	for _, p := range apiPrefixes {
		if strings.HasPrefix(route, p) {
			return true
		}
	}
	return false
}

// stats answers the per-server call aggregates and the upstream sessions
// and listens open as JSON.
func (u *UI) stats(w http.ResponseWriter, r *http.Request) {
	if _, _, _, ok := u.signedIn(r); !ok {
		refuse(w, http.StatusUnauthorized, "not signed in")
		return
	}
	var out []ServerStats
	if u.cfg.Live != nil {
		out = u.cfg.Live.Stats()
	}
	if out == nil {
		out = []ServerStats{}
	}
	w.Header().Set("Content-Type", "application/json")
	answer := map[string]any{"servers": out}
	if u.cfg.Upstream != nil {
		answer["upstream"] = u.cfg.Upstream()
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// events streams the activity log (server-sent events): the ring first,
// then each request as it ends. It ends when the browser leaves, the
// session loses its authority (checked every recheckEvery), or the
// gateway shuts down.
func (u *UI) events(w http.ResponseWriter, r *http.Request) {
	if _, _, _, ok := u.signedIn(r); !ok {
		refuse(w, http.StatusUnauthorized, "not signed in")
		return
	}
	if u.cfg.Live == nil {
		refuse(w, http.StatusNotFound, "the activity log is off")
		return
	}
	ch, cancel, ok := u.cfg.Live.subscribe()
	if !ok {
		w.Header().Set("Retry-After", "10")
		refuse(w, http.StatusServiceUnavailable, "too many activity streams open")
		return
	}
	defer cancel()
	admit.KeepOpen(w, r)
	if u.cfg.Detach != nil {
		u.cfg.Detach(r)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, e := range u.cfg.Live.Recent() {
		writeEntry(w, e)
	}
	_ = rc.Flush()
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, open := <-ch:
			if !open {
				return
			}
			writeEntry(w, e)
		case <-tick.C:
			if _, _, _, ok := u.signedIn(r); !ok {
				return
			}
			_, _ = fmt.Fprint(w, ": ping\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func writeEntry(w http.ResponseWriter, e Entry) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintf(w, "event: entry\ndata: %s\n\n", b)
}
