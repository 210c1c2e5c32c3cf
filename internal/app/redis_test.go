package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpgw/mcpgw/internal/app"
	"github.com/mcpgw/mcpgw/internal/redistest"
)

// envOf is an environment holding m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestRedisReadiness: readiness names the Redis ("ok"), reports it down with the reason while
// it is stopped without failing (the gateway serves on with per-replica limits), and "ok" again
// once it is back, with the same App.
func TestRedisReadiness(t *testing.T) {
	srv := redistest.Start(t)
	a, err := app.New(parse(t, minimal), app.WithLookupEnv(envOf(map[string]string{"REDIS_URL": srv.URL()})))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	a.Start()
	checks := func(wantStatus int) map[string]string {
		t.Helper()
		status, body := readiness(t, a.Handler())
		var r struct{ Checks map[string]string }
		if err := json.Unmarshal([]byte(body), &r); err != nil || status != wantStatus {
			t.Fatalf("readiness %d %s, want %d", status, body, wantStatus)
		}
		return r.Checks
	}
	if c := checks(200); c["redis"] != "ok" {
		t.Fatalf("redis check %q, want ok", c["redis"])
	}
	srv.Stop()
	if c := checks(200); !strings.Contains(c["redis"], "unreachable") || !strings.Contains(c["redis"], "1 outages") {
		t.Fatalf("redis check %q, want unreachable after one outage", c["redis"])
	}
	srv.Restart()
	if c := checks(200); c["redis"] != "ok" {
		t.Fatalf("redis check %q after the restart, want ok", c["redis"])
	}
}

// TestRedisSettingsFromFileAndEnv: the file's cache_params names the server and wins over
// REDIS_HOST; REDIS_PASSWORD fills its missing password; a URL that does not parse stops New
// with a message that does not quote the password.
func TestRedisSettingsFromFileAndEnv(t *testing.T) {
	srv := redistest.Start(t)
	host, port, _ := strings.Cut(srv.Addr(), ":")
	cfg := parse(t, minimal+"litellm_settings:\n  cache: true\n  cache_params:\n    type: redis\n    host: "+host+"\n    port: "+port+"\n")
	a, err := app.New(cfg, app.WithLookupEnv(envOf(map[string]string{"REDIS_HOST": "192.0.2.1", "REDIS_PORT": "1"})))
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	_, body := readiness(t, a.Handler())
	a.Close(context.Background())
	if !strings.Contains(body, `"redis":"ok"`) {
		t.Fatalf("readiness %s: the file's host should win over REDIS_HOST", body)
	}

	for _, env := range []map[string]string{
		{"REDIS_URL": "redis://user:hunter2-secret@127.0.0.1:notaport/0"},
		{"REDIS_URL": "http://user:hunter2-secret@127.0.0.1:1"},
		{"REDIS_HOST": "127.0.0.1", "REDIS_PORT": "99999", "REDIS_PASSWORD": "hunter2-secret"},
	} {
		_, err := app.New(parse(t, minimal), app.WithLookupEnv(envOf(env)))
		if err == nil {
			t.Fatalf("%v: New accepted it", env)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("error quotes the password: %v", err)
		}
	}
}
