package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sync"
)

// maxWarnedURIs bounds the duplicate resource URIs already warned about;
// when full the record starts over (a URI may then be warned about again).
const maxWarnedURIs = 4096

// maxLoggedURIBytes bounds the redacted URI a duplicate warning carries.
const maxLoggedURIBytes = 256

// resourceOwners keeps the first server (in query order) listing each
// resource URI while one aggregate is assembled, and the later servers that
// list it too.
type resourceOwners struct {
	first map[string]string
	also  map[string][]string
}

// keep drops from server's resources those whose URI an earlier server
// listed; cuts (Pages.Cuts) follow the items kept. A server repeating its
// own URI is left alone.
func (o *resourceOwners) keep(server string, items []json.RawMessage, cuts []int) ([]json.RawMessage, []int) {
	if o.first == nil {
		o.first = map[string]string{}
	}
	out := items[:0:0]
	cut := cutter{cuts: cuts}
	for i, it := range items {
		cut.at(i, len(out))
		uri, ok := stringMember(it, "uri")
		if !ok {
			out = append(out, it)
			continue
		}
		owner, seen := o.first[uri]
		switch {
		case !seen:
			o.first[uri] = server
		case owner != server:
			if o.also == nil {
				o.also = map[string][]string{}
			}
			if s := o.also[uri]; len(s) == 0 || s[len(s)-1] != server {
				o.also[uri] = append(s, server)
			}
			continue
		}
		out = append(out, it)
	}
	return out, cut.done(len(out))
}

// warnedURIs remembers which duplicate URIs were warned about, by digest.
type warnedURIs struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]struct{}
}

// first reports whether digest is warned about for the first time, and
// records it.
func (w *warnedURIs) first(digest [sha256.Size]byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seen[digest]; ok {
		return false
	}
	if w.seen == nil || len(w.seen) >= maxWarnedURIs {
		w.seen = map[[sha256.Size]byte]struct{}{}
	}
	w.seen[digest] = struct{}{}
	return true
}

// warnDuplicates logs, once per URI per process, each URI that several
// servers list, naming the server that serves it and those left out. The
// URI is logged without userinfo, query or fragment (where credentials are
// carried), with a digest of the whole URI to tell such URIs apart.
func (c *Catalog) warnDuplicates(ctx context.Context, o *resourceOwners) {
	for uri, others := range o.also {
		digest := sha256.Sum256([]byte(uri))
		if !c.warned.first(digest) {
			continue
		}
		c.log.WarnContext(ctx, "resource URI listed by several upstreams; it is listed once and read from the first",
			"uri", redactURI(uri), "uri_sha256", hex.EncodeToString(digest[:8]), "served_by", o.first[uri], "ignored", others)
	}
}

// redactURI is uri without userinfo, query or fragment, clipped; "" when it
// does not parse.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	u.User = nil
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = "…", false
	}
	u.Fragment, u.RawFragment = "", ""
	s := u.String()
	if len(s) > maxLoggedURIBytes {
		s = s[:maxLoggedURIBytes] + "…"
	}
	return s
}
