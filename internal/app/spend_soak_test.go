package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/store/pgtest"
	"github.com/mcpgw/mcpgw/internal/testpeers"
)

// TestSpendSoak: tool calls made through the gateway over real HTTP to a real upstream, with
// the store on Postgres, leave exactly one spend row each once the App is closed, none
// dropped, and the key's spend is their cost. MCPGW_SPEND_SOAK sets the number of calls
// (default 300; docs/benchmarks.md runs 10 000) and reports the writer's lag.
func TestSpendSoak(t *testing.T) {
	calls := 300
	if v := os.Getenv("MCPGW_SPEND_SOAK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("MCPGW_SPEND_SOAK=%q: want a positive number", v)
		}
		calls = n
	}
	url := pgtest.NewDatabase(t)
	fixture := testpeers.StartGoFixtureHTTP(t, false)
	cfg := parse(t, minimal+"  database_url: "+url+"\nmcp_servers:\n  fx:\n    url: "+fixture+
		"\n    mcp_info:\n      mcp_server_cost_info:\n        default_cost_per_query: 0.001\n")
	a, err := app.New(cfg, app.WithDataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	key := soakKey(t, srv.URL)

	const workers = 8
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(calls) {
				if !soakCall(srv.URL, key) {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	closeStart := time.Now()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flush := time.Since(closeStart)
	st := a.SpendStats()

	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int64
	var spent float64
	if err := db.QueryRow(`SELECT COUNT(*) FROM spend_logs WHERE call_type = 'call_mcp_tool'`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT spend FROM keys WHERE key_alias = 'soak'`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	t.Logf("spend soak: %d tool calls (%d failed) in %v (%.0f calls/s, %d workers); spend rows %d; writer: written %d in %d batches, dropped %d, failed %d, max lag %v, slowest write %v; flush at close %v; key spend %.3f",
		calls, failed.Load(), elapsed.Round(time.Millisecond), float64(calls)/elapsed.Seconds(), workers, rows,
		st.Written, st.Batches, st.Dropped, st.Failed, st.MaxLag.Round(time.Millisecond), st.SlowestWrite.Round(time.Millisecond), flush.Round(time.Millisecond), spent)
	if failed.Load() != 0 || rows != int64(calls) || st.Dropped != 0 || st.Failed != 0 {
		t.Fatalf("%d calls (%d failed) left %d rows, %d dropped, %d failed: want a row per call", calls, failed.Load(), rows, st.Dropped, st.Failed)
	}
	if want := float64(calls) * 0.001; spent < want-1e-6 || spent > want+1e-6 {
		t.Fatalf("key spend %v, want %v", spent, want)
	}
}

// soakKey mints a key with the master key.
func soakKey(t *testing.T, base string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/key/generate", bytes.NewReader([]byte(`{"key_alias":"soak","user_id":"u","max_budget":1000000}`)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Key string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Key == "" {
		t.Fatalf("/key/generate = %d %v", resp.StatusCode, err)
	}
	return out.Key
}

// soakCall makes one modern-era tools/call and reports whether it succeeded.
func soakCall(base, key string) bool {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx-test_simple_text","arguments":{},%s}}`,
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`)
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader([]byte(body)))
	for k, v := range map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
		"Mcp-Method": "tools/call", "Mcp-Name": "fx-test_simple_text"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && bytes.Contains(raw, []byte(`"result"`)) && !bytes.Contains(raw, []byte(`"isError":true`))
}
