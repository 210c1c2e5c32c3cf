package h1serve

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestWritersRacingKeepResponsesApart: goroutines a handler leaves behind
// write, flush and set deadlines while it returns and while the next
// request on the connection is answered. Run with -race: no data race, and
// every response carries only its own bytes (a pooled buffer shared by two
// responses would show another request's marker).
func TestWritersRacingKeepResponsesApart(t *testing.T) {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	addr := serve(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mark := r.URL.Path[1:]
		rc := http.NewResponseController(w)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					if _, err := io.WriteString(w, "<"+mark+">"); err != nil {
						return
					}
					_ = rc.Flush()
				}
			}()
		}
		_, _ = io.WriteString(w, "<"+mark+">")
	})}, nil)
	c, br := rawConn(t, addr)
	for i := range 40 {
		mark := fmt.Sprintf("r%02d", i)
		_, _ = io.WriteString(c, "GET /"+mark+" HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := readResp(t, br, "GET")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		rest := strings.ReplaceAll(body, "<"+mark+">", "")
		if rest != "" || !strings.Contains(body, "<"+mark+">") {
			t.Fatalf("response %d carries bytes not its own: %q", i, rest)
		}
	}
}
