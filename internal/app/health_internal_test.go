package app

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/front"
)

// panicky is a pinger whose check panics.
type panicky struct{}

func (panicky) Ping(context.Context) error { panic("boom") }

// A check that panics is recovered: the process goes on, the server is
// reported unknown with a generic error, and close still ends every
// goroutine (goleak checks).
func TestProberRecoversAPanickingCheck(t *testing.T) {
	p := newProber(slog.New(slog.DiscardHandler), config.HealthSettings{Interval: time.Hour, Timeout: time.Second})
	p.targets["bad"] = &healthTarget{client: panicky{}, last: front.ServerHealth{Status: front.HealthUnknown}}
	got := p.checkNow(context.Background(), []string{"bad"})["bad"]
	if got.Status != front.HealthUnknown || got.Error != "internal error while checking" || got.LastCheck.IsZero() {
		t.Fatalf("after a panicking check: %+v", got)
	}
	p.close()
	if done := p.begin("bad"); done != nil {
		t.Fatal("a closed prober started a check")
	}
}
