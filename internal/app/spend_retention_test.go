package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/config"
	"github.com/mcpgw/mcpgw/internal/store"
)

// TestSpendRetentionDeletesOldRows: with maximum_spend_logs_retention_period set, the spend
// log's retention deletes the rows older than it at start and keeps the newer ones; closing
// the spend log stops it. A period LiteLLM would not read is refused.
func TestSpendRetentionDeletesOldRows(t *testing.T) {
	ctx := context.Background()
	st := sqliteStore(t, store.Options{})
	now := time.Now()
	old := now.Add(-8 * 24 * time.Hour)
	if err := st.RecordSpend(ctx, []store.SpendRow{
		{RequestID: "old", CallType: store.CallTypeTool, Status: store.SpendSuccess, StartTime: old, EndTime: old},
		{RequestID: "new", CallType: store.CallTypeTool, Status: store.SpendSuccess, StartTime: now, EndTime: now},
	}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sl, err := newSpendLog(st, config.GeneralSettings{SpendLogsRetention: "7d"}, log)
	if err != nil || sl.retention == nil {
		t.Fatalf("newSpendLog: %v (retention %v)", err, sl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows, err := st.SpendLogs(ctx, store.SpendFilter{})
		if err == nil && len(rows) == 1 && rows[0].RequestID == "new" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows after the first sweep: %+v %v", rows, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sl.close(log)

	kept, err := newSpendLog(st, config.GeneralSettings{}, log)
	if err != nil || kept.retention != nil {
		t.Fatalf("without a period: %v, retention %v (LiteLLM's default keeps every row)", err, kept.retention)
	}
	kept.close(log)
	for _, g := range []config.GeneralSettings{{SpendLogsRetention: "7 days"}, {SpendLogsRetention: "7d", SpendLogsRetentionInterval: "0h"}} {
		if _, err := newSpendLog(st, g, log); err == nil || !strings.Contains(err.Error(), "maximum_spend_logs_retention") {
			t.Errorf("%+v: err = %v, want it refused", g, err)
		}
	}
}
