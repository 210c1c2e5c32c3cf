package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/fakemcp"
)

// TestServerWriteBurstCoalesces: concurrent /v1/mcp/server writes each return once a
// generation serving them is in place, and share Applies instead of starting one each.
func TestServerWriteBurstCoalesces(t *testing.T) {
	var log fakemcp.LogBuffer
	a, base, _ := storedApp(t, nil, &log)
	before, start := a.Generations(), time.Now()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := api(t, "POST", base+"/v1/mcp/server", fmt.Sprintf(`{"server_name":"burst%d","url":"http://127.0.0.1:1/burst%d/mcp"}`, i, i))
			if status != http.StatusCreated {
				errs <- fmt.Sprintf("%d %s", status, body)
				return
			}
			// The write is served when it returns.
			if status, body := api(t, "GET", base+fmt.Sprintf("/v1/mcp/server/burst%d", i), ""); status != http.StatusOK || !strings.Contains(body, fmt.Sprintf("burst%d", i)) {
				errs <- fmt.Sprintf("burst%d not served: %d %s", i, status, body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if applies := a.Generations() - before; applies >= n || applies < 1 {
		t.Fatalf("%d writes took %d Applies", n, applies)
	}
	// A writer waiting for the next Apply must not hold up the current one's retirement of
	// the generation it runs on (which waited out its 30 s timeout).
	if d := time.Since(start); d > 25*time.Second {
		t.Fatalf("the burst took %v", d)
	}
}
