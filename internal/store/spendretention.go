package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DeleteSpendLogsBefore deletes at most limit spend_logs rows that started before before, in
// one statement, and returns how many it deleted. The daily_spend rollup and the keys' and
// teams' spend are kept: retention forgets the rows, not what they cost.
func (s *Store) DeleteSpendLogsBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	if limit <= 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM spend_logs WHERE request_id IN
		(SELECT request_id FROM spend_logs WHERE start_time < $1 LIMIT $2)`, before.UnixMilli(), limit)
	if err != nil {
		return 0, fmt.Errorf("store: deleting old spend logs: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// errDuration is a duration ParseDuration does not read.
var errDuration = errors.New(`want a whole number and a unit: "30s", "30m", "30h", "30d", "2w" or "1mo"`)

// ParseDuration reads one of LiteLLM's durations (budget_duration,
// maximum_spend_logs_retention_period): a positive whole number followed by s, m, h, d
// (24 h), w (7 d) or mo (30 d). "" is zero (none).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"mo", 30 * 24 * time.Hour}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n <= 0 || n > int64(100*365*24*time.Hour/u.unit) {
			return 0, fmt.Errorf("duration %q: %w", s, errDuration)
		}
		return time.Duration(n) * u.unit, nil
	}
	return 0, fmt.Errorf("duration %q: %w", s, errDuration)
}
