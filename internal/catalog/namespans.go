package catalog

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// nameSpans remembers, per server and list method, where the name of each
// item of the last list presented lies and what it is, with the items
// themselves (the upstream's own bytes, which nothing changes once
// decoded): an item at the same place in the next list, byte for byte the
// same, is not scanned for its name again nor its name copied. It holds
// one list per server and method.
type nameSpans struct {
	mu   sync.Mutex
	last map[string]*spanned // server\x00method → the last list presented
}

// spanned is one list's items and their names; never changed once made.
type spanned struct {
	items []json.RawMessage
	names []itemName
}

// itemName is where an item's name lies (it[start:end], the raw JSON
// string) and what it is; ok is false for an item without one name.
type itemName struct {
	name       string
	start, end int
	ok         bool
}

// of returns the names of items, from the last list of server's method
// where the items are the same.
func (n *nameSpans) of(server, method string, items []json.RawMessage) []itemName {
	key := server + "\x00" + method
	n.mu.Lock()
	last := n.last[key]
	n.mu.Unlock()
	out := make([]itemName, len(items))
	same := last != nil && len(last.items) == len(items)
	for i, it := range items {
		if last != nil && i < len(last.items) && bytes.Equal(it, last.items[i]) {
			out[i] = last.names[i]
			continue
		}
		same = false
		raw, start, end, dup := jsonrpc.MemberSpan(it, "name")
		name, ok := jsonrpc.Unquote(raw)
		out[i] = itemName{name: name, start: start, end: end, ok: ok && !dup}
	}
	if !same {
		n.mu.Lock()
		if n.last == nil || len(n.last) >= maxSeen {
			n.last = map[string]*spanned{}
		}
		n.last[key] = &spanned{items: items, names: out}
		n.mu.Unlock()
	}
	return out
}
