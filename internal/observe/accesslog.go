package observe

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// AccessLog is the Sink that writes one INFO line per downstream request
// when it ends: what was asked (method, target, server), of whom (caller
// ids: key hash and alias, team, user, end user, org), how it went (status,
// error type, fault class) and how long it took. Never arguments, results,
// tokens or session ids.
//
// Built by NewAccessLog it logs through a slog.Logger; built by
// NewAccessLogLines it encodes the same line itself (the bytes slog's
// JSONHandler writes for it, the time being the request's end) into a Lines
// buffer: no slog record, no attribute slice, no write per request.
type AccessLog struct {
	Base
	Logger *slog.Logger
	lines  *Lines
	pool   sync.Pool // *[]byte buffers the lines are encoded in
}

// NewAccessLog returns the access-log sink writing to log.
func NewAccessLog(log *slog.Logger) *AccessLog { return &AccessLog{Logger: log} }

// NewAccessLogLines returns the access-log sink encoding its JSON lines
// itself, as slog's JSONHandler would, into lines.
func NewAccessLogLines(lines *Lines) *AccessLog {
	a := &AccessLog{lines: lines}
	a.pool.New = func() any { b := make([]byte, 0, 512); return &b }
	return a
}

// accessMsg is the access line's message.
const accessMsg = "mcp request"

// EndRequest writes the request's line.
func (a *AccessLog) EndRequest(ctx context.Context, r *Request) {
	if a.lines != nil {
		bp := a.pool.Get().(*[]byte)
		*bp = appendAccessLine((*bp)[:0], r.Start.Add(r.Duration), r)
		_, _ = a.lines.Write(*bp)
		if cap(*bp) <= maxPooledLine {
			a.pool.Put(bp)
		}
		return
	}
	if !a.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	a.Logger.LogAttrs(ctx, slog.LevelInfo, accessMsg, accessAttrs(r)...)
}

// accessAttrs are the attributes of r's access line, in order.
func accessAttrs(r *Request) []slog.Attr {
	attrs := make([]slog.Attr, 0, 18)
	attrs = append(attrs, slog.String("method", r.Method), slog.String("transport", r.Transport),
		slog.Int("status", r.Status), slog.Float64("duration_ms", float64(r.Duration.Microseconds())/1000))
	return appendNonEmpty(attrs, "target", r.Target, "server", r.Server, "protocol", r.Protocol,
		"error_type", r.ErrorType(), "fault", r.Fault.String(),
		"key_hash", r.Caller.KeyHash, "key_alias", r.Caller.KeyAlias, "team", r.Caller.Team,
		"team_alias", r.Caller.TeamAlias, "user", r.Caller.User, "end_user", r.Caller.EndUser, "org", r.Caller.Org)
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

// maxPooledLine bounds the buffers an AccessLog keeps for its lines: one grown
// past it (a line of very long names) is left to the collector.
const maxPooledLine = 4 << 10

// appendAccessLine appends r's access line, at time t, as slog's JSONHandler
// writes the record AccessLog logs through a logger: the same keys in the
// same order, strings escaped by the same rules, the duration formatted as
// encoding/json formats a float64.
func appendAccessLine(b []byte, t time.Time, r *Request) []byte {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"`+accessMsg+`","method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"transport":`...)
	b = appendJSONString(b, r.Transport)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, float64(r.Duration.Microseconds())/1000)
	b = appendField(b, `,"target":`, r.Target)
	b = appendField(b, `,"server":`, r.Server)
	b = appendField(b, `,"protocol":`, r.Protocol)
	b = appendField(b, `,"error_type":`, r.ErrorType())
	b = appendField(b, `,"fault":`, r.Fault.String())
	b = appendField(b, `,"key_hash":`, r.Caller.KeyHash)
	b = appendField(b, `,"key_alias":`, r.Caller.KeyAlias)
	b = appendField(b, `,"team":`, r.Caller.Team)
	b = appendField(b, `,"team_alias":`, r.Caller.TeamAlias)
	b = appendField(b, `,"user":`, r.Caller.User)
	b = appendField(b, `,"end_user":`, r.Caller.EndUser)
	b = appendField(b, `,"org":`, r.Caller.Org)
	return append(b, "}\n"...)
}

// appendField appends key (`,"name":`) and v when v is not empty.
func appendField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendJSONString(append(b, key...), v)
}

// appendJSONString appends s quoted as slog's JSONHandler quotes it: `"` and
// `\` escaped, \n \r \t by name and the other control bytes as \u00XX, each
// invalid UTF-8 byte as \ufffd, U+2028 and U+2029 escaped; everything else
// as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat appends f as encoding/json writes a float64 (what slog's
// JSONHandler uses for one): the shortest decimal, in exponent form only below
// 1e-6 or from 1e21, with a one-digit negative exponent unpadded.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// closeLines writes out the lines the sink buffers; later lines are written at once.
func (a *AccessLog) closeLines() {
	if a.lines != nil {
		a.lines.Close()
	}
}
