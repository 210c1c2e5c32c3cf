package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Digest is a digest of what q's caller sees of one server's list: the
// items of method (every page, from the list cache when the upstream
// allowed caching), filtered and renamed as List presents them. Two equal
// digests mean the caller's view did not change, whatever changed behind
// it (a tool the caller may not see). The error is the fetch's: the view
// is then unknown.
func (c *Catalog) Digest(ctx context.Context, q Query, server, method string) (string, error) {
	s := c.servers[server]
	if s == nil {
		return "", fmt.Errorf("digest of %s: unknown server %q", method, server)
	}
	items, err := c.fetch(ctx, q, s, method)
	if err != nil {
		return "", fmt.Errorf("digest of %s on %s: %w", method, server, err)
	}
	h := sha256.New()
	var n [8]byte
	shown, _, _ := c.present(q, server, method, items, nil)
	for _, it := range shown {
		binary.BigEndian.PutUint64(n[:], uint64(len(it)))
		h.Write(n[:])
		h.Write(it)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
