package observe

import (
	"context"
	"log/slog"
)

// AccessLog is the Sink that writes one INFO line per downstream request
// when it ends: what was asked (method, target, server), of whom (caller
// ids: key hash and alias, team, user, end user, org), how it went (status,
// error type, fault class) and how long it took. Never arguments, results,
// tokens or session ids.
type AccessLog struct {
	Base
	Logger *slog.Logger
}

// NewAccessLog returns the access-log sink writing to log.
func NewAccessLog(log *slog.Logger) *AccessLog { return &AccessLog{Logger: log} }

// EndRequest writes the request's line.
func (a *AccessLog) EndRequest(ctx context.Context, r *Request) {
	if !a.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 18)
	attrs = append(attrs, slog.String("method", r.Method), slog.String("transport", r.Transport),
		slog.Int("status", r.Status), slog.Float64("duration_ms", float64(r.Duration.Microseconds())/1000))
	attrs = appendNonEmpty(attrs, "target", r.Target, "server", r.Server, "protocol", r.Protocol,
		"error_type", r.ErrorType(), "fault", r.Fault.String(),
		"key_hash", r.Caller.KeyHash, "key_alias", r.Caller.KeyAlias, "team", r.Caller.Team,
		"team_alias", r.Caller.TeamAlias, "user", r.Caller.User, "end_user", r.Caller.EndUser, "org", r.Caller.Org)
	a.Logger.LogAttrs(ctx, slog.LevelInfo, "mcp request", attrs...)
}

// appendNonEmpty appends each name/value pair whose value is not empty.
func appendNonEmpty(attrs []slog.Attr, pairs ...string) []slog.Attr {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			attrs = append(attrs, slog.String(pairs[i], pairs[i+1]))
		}
	}
	return attrs
}
