package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/mcpgw/mcpgw/internal/fault"
	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/mcp"
)

// cursorTTL bounds how long an aggregate cursor stays valid.
const cursorTTL = 10 * time.Minute

// PageSize is how many items one page of an aggregated list holds at most;
// a page also ends where an upstream's page ended.
const PageSize = 500

// aggregate is the list a page is cut from: every server's items in query
// order, where their upstream pages ended (indices into items), and each
// server's outcome.
type aggregate struct {
	items    []json.RawMessage
	cuts     []int
	outcomes map[string]Outcome
}

// page encodes one page of an aggregate, from offset to pageEnd (the whole
// rest for q.Whole), with the cursor of the next.
func (c *Catalog) page(key, method string, q Query, agg aggregate, offset int, snapID string) (json.RawMessage, *fault.Fault) {
	items := agg.items
	offset = min(offset, len(items))
	end := len(items)
	if !q.Whole {
		end = c.pageEnd(agg, offset)
	}
	next := ""
	if end < len(items) {
		var err error
		if next, err = c.sealNext(cursor{Method: method, Binding: q.Binding, Offset: end, Snapshot: snapID}); err != nil {
			return nil, fault.New(fault.Internal, "cannot paginate: %v", err)
		}
	}
	return encodeList(key, items[offset:end], next, agg.outcomes), nil
}

// pageEnd is where the page beginning at offset ends: after pageSize items,
// where an upstream's page ended, or at the end, whichever comes first.
func (c *Catalog) pageEnd(agg aggregate, offset int) int {
	end := min(len(agg.items), offset+c.pageSize)
	if i, _ := slices.BinarySearch(agg.cuts, offset+1); i < len(agg.cuts) && agg.cuts[i] < end {
		end = agg.cuts[i]
	}
	return end
}

// cutter carries a list's cuts (Pages.Cuts) over to a filtered copy of it:
// a cut falls before the first kept item of the page it began, and cuts
// that coincide or fall at either end of the copy are dropped.
type cutter struct {
	cuts []int
	k    int   // the next cut of cuts
	out  []int // the copy's cuts
}

// at is called before item i of the list is considered, when n items were
// kept.
func (c *cutter) at(i, n int) {
	for c.k < len(c.cuts) && c.cuts[c.k] <= i {
		if n > 0 && (len(c.out) == 0 || c.out[len(c.out)-1] < n) {
			c.out = append(c.out, n)
		}
		c.k++
	}
}

// done returns the cuts of the copy, of n items.
func (c *cutter) done(n int) []int {
	for len(c.out) > 0 && c.out[len(c.out)-1] >= n {
		c.out = c.out[:len(c.out)-1]
	}
	return c.out
}

// encodeList encodes one page of a list result, its servers' outcomes in
// _meta.
func encodeList(key string, items []json.RawMessage, next string, outcomes map[string]Outcome) json.RawMessage {
	size := 128 + len(key) + len(next) + len(mcp.MetaServerOutcomes) + 72*len(outcomes)
	for name := range outcomes {
		size += len(name)
	}
	for _, it := range items {
		size += len(it) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{', '"')
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		b = jsonrpc.AppendString(b, next)
	}
	b = append(b, `,"ttlMs":0,"cacheScope":"private","_meta":{"`...)
	b = append(b, mcp.MetaServerOutcomes...)
	b = append(b, `":`...)
	b = appendOutcomes(b, outcomes)
	return append(b, '}', '}')
}

// appendOutcomes appends outcomes as encoding/json encodes the map (its
// keys sorted, each Outcome by its struct tags), without reflection.
func appendOutcomes(b []byte, outcomes map[string]Outcome) []byte {
	if outcomes == nil {
		return append(b, "null"...)
	}
	names := make([]string, 0, len(outcomes))
	for name := range outcomes {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		o := outcomes[name]
		b = jsonrpc.AppendString(b, name)
		b = append(b, `:{"status":`...)
		b = jsonrpc.AppendString(b, o.Status)
		if o.Count != nil {
			b = strconv.AppendInt(append(b, `,"count":`...), int64(*o.Count), 10)
		}
		if o.ToolCount != nil {
			b = strconv.AppendInt(append(b, `,"tool_count":`...), int64(*o.ToolCount), 10)
		}
		if o.HTTPStatus != 0 {
			b = strconv.AppendInt(append(b, `,"http_status":`...), int64(o.HTTPStatus), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// cursor is the sealed content of an aggregate cursor.
type cursor struct {
	Method   string `json:"m"`
	Binding  string `json:"b"`
	Offset   int    `json:"o"`
	Snapshot string `json:"s,omitempty"` // the walk's list on the replica that began it
}

// sealNext seals the cursor of a next page.
func (c *Catalog) sealNext(cur cursor) (string, error) {
	if c.sealer == nil {
		return "", errors.New("no sealer")
	}
	b, _ := json.Marshal(cur)
	return c.sealer.Seal(SealPurpose, b, cursorTTL)
}

// openCursor opens a caller's cursor, refusing one sealed for another
// method or binding.
func (c *Catalog) openCursor(tok, method, binding string) (cursor, error) {
	var cur cursor
	if c.sealer == nil {
		return cur, errors.New("no sealer")
	}
	b, err := c.sealer.Open(SealPurpose, tok)
	if err != nil {
		return cur, err
	}
	if err := json.Unmarshal(b, &cur); err != nil {
		return cur, err
	}
	if cur.Method != method || cur.Binding != binding || cur.Offset < 0 {
		return cur, errors.New("cursor bound to another caller or method")
	}
	return cur, nil
}
