package sse_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/mcpgw/mcpgw/internal/sse"
)

// mcpStream returns n events shaped like a Streamable HTTP response stream:
// a priming event, progress notifications and JSON-RPC results.
func mcpStream(n int) []byte {
	var buf bytes.Buffer
	w := sse.NewWriter(&buf)
	_ = w.WriteEvent(sse.Event{ID: "stream-1:0"})
	for i := range n {
		var data string
		if i%4 == 3 {
			data = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Result number %d."}],"isError":false}}`, i, i)
		} else {
			data = fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-%d","progress":%d,"total":100,"message":"working"}}`, i, i%100)
		}
		_ = w.WriteEvent(sse.Event{Type: "message", ID: fmt.Sprintf("stream-1:%d", i+1), Data: []byte(data)})
		if i%50 == 0 {
			_ = w.WriteComment("keepalive")
		}
	}
	return buf.Bytes()
}

func BenchmarkReader(b *testing.B) {
	const n = 1000
	stream := mcpStream(n)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := sse.NewReader(bytes.NewReader(stream), 0)
		events := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events++
		}
		if events != n+1 {
			b.Fatalf("read %d events, want %d", events, n+1)
		}
	}
}

func BenchmarkWriter(b *testing.B) {
	ev := sse.Event{Type: "message", ID: "stream-1:42", Data: []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello"}]}}`)}
	w := sse.NewWriter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.WriteEvent(ev); err != nil {
			b.Fatal(err)
		}
	}
}
