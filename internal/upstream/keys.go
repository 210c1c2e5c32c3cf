package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// CredentialKey names the per-caller credentials of opts as the sessions
// (and Config.OnNotification) name them: callers with equal keys share an
// upstream session.
func CredentialKey(opts Options) string { return credentialDigest(opts.Header, opts.Token) }

// OwnerKey names the own session of owner among those of the credentials
// named cred (a CredentialKey); cred itself when owner is "".
func OwnerKey(cred, owner string) string {
	if owner == "" {
		return cred
	}
	return cred + ownerSep + owner
}

// ownerSep separates the credentials from the owner in an OwnerKey.
const ownerSep = "\x00owner\x00"

// SplitNotificationKey is the inverse of OwnerKey: the credentials and the
// owner ("" for a shared session) a session's notification key names.
func SplitNotificationKey(key string) (cred, owner string) {
	cred, owner, _ = strings.Cut(key, ownerSep)
	return cred, owner
}

// OwnSessions names the live sessions of one caller each (their OwnerKeys):
// such an owner hears this upstream's notifications on its own session, not
// on the shared one. One scan of the pool serves a whole notification.
func (c *Client) OwnSessions() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var own map[string]bool
	for _, s := range c.sessions {
		if s.owned() && !s.gone() {
			if own == nil {
				own = map[string]bool{}
			}
			own[s.notify] = true
		}
	}
	return own
}

// credentialDigest names per-caller headers and token without keeping them
// in clear as a map key. It reads the map entries themselves, so a
// non-canonical key (which auth.Policy.Apply forwards under its canonical
// name) is hashed like any other. Keys that differ only in case are merged
// under the canonical name, each spelling's values kept apart and in a
// fixed order: Apply lets one of them win, so callers whose duplicates
// differ in any way never share a session.
func credentialDigest(h http.Header, token string) string {
	if len(h) == 0 && token == "" {
		return ""
	}
	type entry struct{ canon, key string }
	entries := make([]entry, 0, len(h))
	for k := range h {
		entries = append(entries, entry{http.CanonicalHeaderKey(k), k})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.canon, b.canon); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	sum := sha256.New()
	fmt.Fprintf(sum, "%q\x00", token)
	for i, e := range entries {
		if i == 0 || entries[i-1].canon != e.canon {
			fmt.Fprintf(sum, "\x00%q:", e.canon)
		}
		sum.Write([]byte{'['})
		for _, v := range h[e.key] {
			fmt.Fprintf(sum, "%q,", v)
		}
		sum.Write([]byte{']'})
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// ownerOf names the caller whose own session opts select ("" for a shared
// session).
func ownerOf(opts Options) string {
	if opts.Interactions == nil {
		return ""
	}
	return opts.Interactions.Owner
}
