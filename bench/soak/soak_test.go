package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The checks must tell a server that bounds slow and idle connections from
// one that does not, or the "after" figures would mean nothing.

func serverAddr(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

func TestTrickleSeesTheCut(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, tc := range []struct {
		name        string
		readTimeout time.Duration
		want        string
	}{
		{"bounded", 2 * time.Second, "cut after"},
		{"unbounded", 0, "**not cut**"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					http.Error(w, "slow", http.StatusRequestTimeout)
				}
			}))
			srv.Config.ReadTimeout = tc.readTimeout
			srv.Start()
			defer srv.Close()
			if got := trickle(context.Background(), serverAddr(srv), 4*time.Second); !strings.Contains(got, tc.want) {
				t.Fatalf("trickle = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIdleConnSeesTheCut(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.IdleTimeout = time.Second
	srv.Start()
	defer srv.Close()
	c, err := idleConn(serverAddr(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on an idle connection the server should have closed: %v", err)
	}
}

func TestUploadSeesAnEarlyRefusal(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	defer srv.Close()
	u := &upload{}
	u.run(serverAddr(srv), time.Now().Add(5*time.Second))
	defer u.conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for u.status.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := u.status.Load(); got != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401", got)
	}
}
