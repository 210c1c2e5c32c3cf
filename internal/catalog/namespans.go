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
// same, is not scanned for its name again nor its name copied, and the
// same list again is not renamed again (its prefixed items are kept with
// it). It holds one list per server and method.
type nameSpans struct {
	mu   sync.Mutex
	last map[string]*spanned // server\x00method → the last list presented
}

// spanned is one list's items and their names; never changed once made,
// but for prefixed, made once when first asked for.
type spanned struct {
	items []json.RawMessage
	spans []itemName
	names []string // names[i] is spans[i].name, "" for an item without one name

	once     sync.Once
	prefixed []json.RawMessage // the items renamed with their server's prefix (nil for those without one name)
}

// itemName is where an item's name lies (it[start:end], the raw JSON
// string) and what it is; ok is false for an item without one name.
type itemName struct {
	name       string
	start, end int
	ok         bool
}

// of returns the names of items, from the last list of server's method
// where the items are the same; the same list as the last one gets the
// last one's spanned.
func (n *nameSpans) of(server, method string, items []json.RawMessage) *spanned {
	key := server + "\x00" + method
	n.mu.Lock()
	last := n.last[key]
	n.mu.Unlock()
	if last != nil && jsonrpc.EqualRaws(items, last.items) {
		return last
	}
	s := &spanned{items: items, spans: make([]itemName, len(items)), names: make([]string, len(items))}
	for i, it := range items {
		if last != nil && i < len(last.items) && bytes.Equal(it, last.items[i]) {
			s.spans[i], s.names[i] = last.spans[i], last.names[i]
			continue
		}
		raw, start, end, dup := jsonrpc.MemberSpan(it, "name")
		name, ok := jsonrpc.Unquote(raw)
		ok = ok && !dup
		s.spans[i] = itemName{name: name, start: start, end: end, ok: ok}
		if ok {
			s.names[i] = name
		}
	}
	n.mu.Lock()
	if n.last == nil || len(n.last) >= maxSeen {
		n.last = map[string]*spanned{}
	}
	n.last[key] = s
	n.mu.Unlock()
	return s
}

// renamed returns the items with prefix (`"<server><sep>`, a JSON string
// without its end) before each name, made on the first call: the renamed
// items share one buffer, and everything but the name is the upstream's
// bytes as they are.
func (s *spanned) renamed(prefix []byte) []json.RawMessage {
	s.once.Do(func() {
		size := 0
		for _, it := range s.items {
			size += len(it) + len(prefix)
		}
		buf := make([]byte, 0, size)
		s.prefixed = make([]json.RawMessage, len(s.items))
		for i, it := range s.items {
			sp := s.spans[i]
			if !sp.ok {
				continue
			}
			from := len(buf)
			buf = append(append(buf, it[:sp.start]...), prefix...)
			// The name as this gateway encodes strings, its opening quote
			// dropped: prefix has one.
			q := len(buf)
			buf = jsonrpc.AppendString(buf, sp.name)
			buf = append(buf[:q], buf[q+1:]...)
			buf = append(buf, it[sp.end:]...)
			s.prefixed[i] = buf[from:len(buf):len(buf)]
		}
	})
	return s.prefixed
}
