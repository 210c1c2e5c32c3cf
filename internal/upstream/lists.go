package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// ListResult is a whole list with the caching hints its pages carried.
type ListResult struct {
	Items []json.RawMessage
	// TTL is the smallest ttlMs any page gave (modern upstreams); zero when
	// the upstream gave none, which means "do not cache".
	TTL time.Duration
	// Private is set when any page said cacheScope "private": the list may
	// differ per credential.
	Private bool
	// Cuts are where the upstream's pages ended: the item counts at which
	// one page ended and a later one began, ascending, each strictly
	// between 0 and len(Items) (empty pages leave no cut); nil when the
	// upstream sent one page.
	Cuts []int
}

// List walks every page of a list method: tools/list, prompts/list,
// resources/list or resources/templates/list. The optional lists come back
// empty when the upstream does not offer the capability.
func (c *Client) List(ctx context.Context, method string, opts Options) (ListResult, error) {
	switch method {
	case mcp.MethodToolsList:
		return c.listAll(ctx, method, "tools", nil, opts)
	case mcp.MethodPromptsList:
		return c.listAll(ctx, method, "prompts", mcp.ServerCapabilities.HasPrompts, opts)
	case mcp.MethodResourcesList:
		return c.listAll(ctx, method, "resources", mcp.ServerCapabilities.HasResources, opts)
	case mcp.MethodResourcesTemplatesList:
		return c.listAll(ctx, method, "resourceTemplates", mcp.ServerCapabilities.HasResources, opts)
	}
	return ListResult{}, fmt.Errorf("%s is not a list method", method)
}

// ListTools returns every tool of the upstream, walking all pages.
func (c *Client) ListTools(ctx context.Context, opts Options) ([]json.RawMessage, error) {
	r, err := c.List(ctx, mcp.MethodToolsList, opts)
	return r.Items, err
}

// ErrIncompleteList means a paginated walk could not reach its end; no
// partial list is ever returned.
var ErrIncompleteList = errors.New("incomplete list")

// listAll walks every page of a list method under the listing timeout. An
// optional list (offered is non-nil) is only asked for when the upstream
// advertised the capability, and a -32601 answer means "none". An ephemeral
// walk is one conversation: one session for the capability check and every
// page, ended once at the end.
func (c *Client) listAll(ctx context.Context, method, key string, offered func(mcp.ServerCapabilities) bool, opts Options) (ListResult, error) {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.ListTimeout)
	defer cancel()
	var (
		out ListResult
		err error
	)
	if opts.Ephemeral {
		paged := false // a page logs its own failure; a setup failure is logged below
		err = c.ownSession(wctx, opts, func(s *session) (err error) {
			on := opts
			on.held = s // every page on this one session
			out, err = c.walk(method, key, offered, s.info, func(params, same json.RawMessage) (Result, error) {
				paged = true
				on.same = same
				return c.Call(wctx, method, params, on)
			})
			return err
		})
		if err != nil && !paged && offered == nil {
			// As on the pooled path, where the first page's Call reports it.
			c.logFailure(wctx, method, "", opts, err)
		}
	} else {
		var info Info
		if offered != nil {
			info, err = c.Info(wctx, opts)
		}
		if err == nil {
			out, err = c.walk(method, key, offered, info, func(params, same json.RawMessage) (Result, error) {
				on := opts
				on.same = same
				return c.Call(wctx, method, params, on)
			})
		}
	}
	if err != nil {
		return ListResult{}, c.walkErr(ctx, wctx, method, err)
	}
	return out, nil
}

// walk checks the capability (for an optional list) in info and asks page
// for every page in turn, with the result the last walk had for that page
// (same; nil when none), which an unchanged list repeats.
func (c *Client) walk(method, key string, offered func(mcp.ServerCapabilities) bool, info Info, page func(params, same json.RawMessage) (Result, error)) (ListResult, error) {
	if offered != nil {
		// A modern upstream whose discover failed has unknown capabilities:
		// ask, and let -32601 say no.
		known := info.Era == mcp.EraLegacy || info.SupportedVersions != nil
		if known && !offered(info.Capabilities) {
			return ListResult{}, nil
		}
	}
	var out ListResult
	unhinted := false
	seen := map[string]bool{}
	cursor := ""
	for n := 1; ; n++ {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = namedParams("cursor", cursor, "", nil)
		}
		res, err := page(params, c.pages.lastRaw(method, n))
		if err != nil {
			if re := rpcErr(err); offered != nil && n == 1 && re != nil && re.Code() == jsonrpc.CodeMethodNotFound {
				c.cfg.Logger.Debug("Optional list rejected by upstream", "method", method)
				return ListResult{}, nil
			}
			return ListResult{}, err
		}
		pg, err := c.pages.parse(method, n, res.Raw, key)
		if err != nil {
			return ListResult{}, err
		}
		if n > 1 && len(out.Items) > 0 && (len(out.Cuts) == 0 || out.Cuts[len(out.Cuts)-1] < len(out.Items)) {
			out.Cuts = append(out.Cuts, len(out.Items))
		}
		out.Items = append(out.Items, pg.items...)
		// The list may be cached for the shortest TTL of its pages; one page
		// without a hint makes the whole list uncacheable.
		switch {
		case pg.ttl < 0:
			unhinted = true
		case n == 1 || pg.ttl < out.TTL:
			out.TTL = pg.ttl
		}
		out.Private = out.Private || pg.private
		next := pg.next
		if next == "" {
			if unhinted {
				out.TTL = 0
			}
			if method == mcp.MethodToolsList && c.cfg.Transport == TransportHTTP {
				kept := c.params.learn(out.Items, func(tool, why string) {
					c.cfg.Logger.Warn("upstream tool dropped: invalid x-mcp-header annotation", "tool", tool, "reason", why)
				})
				out.Cuts = recut(out.Items, kept, out.Cuts)
				out.Items = kept
			}
			if k := len(out.Cuts); k > 0 && out.Cuts[k-1] >= len(out.Items) {
				out.Cuts = out.Cuts[:k-1] // trailing empty pages
			}
			return out, nil
		}
		if seen[next] {
			return ListResult{}, fmt.Errorf("%s: upstream repeated a cursor after %d pages: %w", method, n, ErrIncompleteList)
		}
		if n >= c.cfg.MaxPages {
			return ListResult{}, fmt.Errorf("%s: more pages than the cap of %d: %w", method, c.cfg.MaxPages, ErrIncompleteList)
		}
		seen[next] = true
		cursor = next
	}
}

// recut maps cuts, page ends in items, onto kept, the items that remain
// after some were dropped (a subsequence of items sharing their bytes): a
// cut falls before the first kept item of the page it began. Cuts that
// coincide, or fall at the start or end of kept, are dropped.
func recut(items, kept []json.RawMessage, cuts []int) []int {
	if len(cuts) == 0 || len(kept) == len(items) {
		return cuts
	}
	out := cuts[:0]
	j, k := 0, 0
	for i := 0; i < len(items) && k < len(cuts); i++ {
		for k < len(cuts) && cuts[k] == i {
			if j > 0 && j < len(kept) && (len(out) == 0 || out[len(out)-1] < j) {
				out = append(out, j)
			}
			k++
		}
		if j < len(kept) && len(items[i]) > 0 && len(kept[j]) > 0 && &items[i][0] == &kept[j][0] {
			j++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// walkErr turns the walk's own deadline into a TimeoutError: only when the
// walk budget (wctx) passed while the caller's ctx was live, so the caller's
// own deadline is never reported as our timeout.
func (c *Client) walkErr(ctx, wctx context.Context, method string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && wctx.Err() != nil && ctx.Err() == nil {
		return c.timedOut(method, c.cfg.ListTimeout)
	}
	return err
}

// pageMemo remembers the pages of the last walk of each list method, as
// the upstream sent them and as parsePage split them: a page that comes
// again byte for byte (an unchanged list, the common case) is not split
// again, and its items are the very slices the last walk returned, which
// the later steps (the annotations, the pinner, the catalog's name spans)
// tell unchanged by their address before comparing any byte. It holds one
// walk per method (at most Config.MaxPages pages of at most the largest
// message each), bytes the catalog keeps anyway while the list is served.
type pageMemo struct {
	mu   sync.Mutex
	last map[string][]memoPage // by method: page n of the last walk at n-1
}

// memoPage is one remembered page: the result's bytes and what they split
// into (which nothing changes once made).
type memoPage struct {
	raw json.RawMessage
	pg  page
}

// lastRaw returns the result page n (from 1) of the last walk of method
// had, nil when there was none.
func (m *pageMemo) lastRaw(method string, n int) json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last := m.last[method]; n <= len(last) {
		return last[n-1].raw
	}
	return nil
}

// parse is parsePage for page n (from 1) of a walk of method, reusing the
// last walk's page n when raw is the same bytes.
func (m *pageMemo) parse(method string, n int, raw json.RawMessage, key string) (page, error) {
	m.mu.Lock()
	last := m.last[method]
	m.mu.Unlock()
	if n <= len(last) && bytes.Equal(last[n-1].raw, raw) {
		return last[n-1].pg, nil
	}
	pg, err := parsePage(raw, key)
	if err != nil {
		return pg, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string][]memoPage{}
	}
	walk := m.last[method]
	if n == 1 || n-1 > len(walk) {
		walk = nil // a new walk; pages of another walk are not mixed in
	}
	// A copy, never an append to the slice others may be reading.
	walk = append(append(make([]memoPage, 0, n), walk[:min(n-1, len(walk))]...), memoPage{raw: raw, pg: pg})
	m.last[method] = walk
	return pg, nil
}

// page is one list result, split.
type page struct {
	items   []json.RawMessage
	next    string
	ttl     time.Duration // -1 when the page gave no ttlMs
	private bool
}

// parsePage splits one list result into its items, next cursor and caching
// hints.
func parsePage(raw json.RawMessage, key string) (page, error) {
	// raw is a result from a message the decoder already validated: its
	// members are located, and the items are sub-slices of it, not decoded.
	pg := page{ttl: -1}
	if len(raw) == 0 || raw[0] != '{' {
		return pg, protoErr("invalid MCP response: list result is not an object", nil)
	}
	var bad string
	err := jsonrpc.EachMember(raw, func(k string, v []byte) error {
		switch k {
		case key:
			pg.items = pg.items[:0] // a repeated member replaces, as in encoding/json
			if string(v) == "null" {
				return nil
			}
			if v[0] != '[' {
				bad = key + " is not an array"
				return errors.New(bad)
			}
			return jsonrpc.EachElement(v, func(it []byte) error {
				if it[0] != '{' {
					bad = key + " holds a non-object"
					return errors.New(bad)
				}
				pg.items = append(pg.items, it)
				return nil
			})
		case "nextCursor":
			if string(v) == "null" {
				return nil
			}
			next, ok := jsonrpc.Unquote(v)
			if !ok {
				bad = "nextCursor is not a string"
				return errors.New(bad)
			}
			pg.next = next
		case "ttlMs":
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
				pg.ttl = time.Duration(n) * time.Millisecond
			}
		case "cacheScope":
			scope, _ := jsonrpc.Unquote(v)
			pg.private = scope == mcp.CacheScopePrivate
		}
		return nil
	})
	if err != nil {
		if bad == "" {
			bad = "list result is not an object"
		}
		return page{ttl: -1}, protoErr("invalid MCP response: "+bad, nil)
	}
	return pg, nil
}
