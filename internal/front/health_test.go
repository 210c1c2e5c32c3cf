package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	var ready error
	h := &Health{Version: "v1", Checks: []Check{
		{Name: "config", Probe: func(context.Context) error { return ready }},
		{Name: "slow", Probe: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return nil
		}},
	}, CheckTimeout: time.Second}
	mux := http.NewServeMux()
	h.Register(mux)

	do := func(method, path string) (*httptest.ResponseRecorder, map[string]any) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec, body
	}

	for _, p := range []string{"/health/liveliness", "/health/liveness"} {
		rec, _ := do("GET", p)
		if rec.Code != 200 || rec.Body.String() != "\"I'm alive!\"\n" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s = %d %q", p, rec.Code, rec.Body.String())
		}
	}
	if rec, _ := do("POST", "/health/liveliness"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST liveliness = %d", rec.Code)
	}

	rec, body := do("GET", "/health/readiness")
	if rec.Code != 200 || body["status"] != "healthy" || body["version"] != "v1" {
		t.Errorf("ready = %d %s", rec.Code, rec.Body.String())
	}
	if checks := body["checks"].(map[string]any); checks["config"] != "ok" || checks["slow"] != "ok" {
		t.Errorf("checks = %v", checks)
	}

	ready = errors.New("not loaded")
	rec, body = do("GET", "/health/readiness")
	if rec.Code != 503 || body["status"] != "unhealthy" || body["reason"] != "config: not loaded" {
		t.Errorf("not ready = %d %s", rec.Code, rec.Body.String())
	}
}
