package front

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/store"
)

// maxSpendRows bounds one /spend/logs answer.
const maxSpendRows = 1000

// RegisterSpend adds the spend routes to mux: GET /spend/logs (LiteLLM's query parameters:
// api_key, user_id, request_id, start_date, end_date) and GET /spend/daily (the daily
// rollup per key, team and server). The proxy admin and proxy_admin_viewer see every row;
// any other caller sees its own key's rows only.
func (k *Keys) RegisterSpend(mux *http.ServeMux) {
	mux.HandleFunc("GET /spend/logs", k.managed(perResource, k.spendLogs))
	mux.HandleFunc("GET /spend/daily", k.managed(perResource, k.spendDaily))
}

// spendLogJSON is one spend row as LiteLLM's /spend/logs answers it.
type spendLogJSON struct {
	RequestID string  `json:"request_id"`
	CallType  string  `json:"call_type"`
	APIKey    string  `json:"api_key"`
	Spend     float64 `json:"spend"`
	StartTime string  `json:"startTime"`
	EndTime   string  `json:"endTime"`
	Model     string  `json:"model"`
	// MCPNamespacedToolName is the tool as called, as LiteLLM names it for MCP calls.
	MCPNamespacedToolName string         `json:"mcp_namespaced_tool_name"`
	User                  string         `json:"user"`
	TeamID                string         `json:"team_id"`
	EndUser               string         `json:"end_user"`
	Status                string         `json:"status"`
	Metadata              map[string]any `json:"metadata"`
}

// spendOwner is the api_key a caller may read: "" for every key (admin, viewer), else the
// caller's own; ok is false when the caller asked for another key's rows.
func spendOwner(m manager, asked string) (key string, ok bool) {
	if strings.HasPrefix(asked, store.KeyPrefix) {
		asked = store.Hash(asked)
	}
	if m.viewer() {
		return asked, true
	}
	own := m.caller.KeyHash
	if own == "" || (asked != "" && asked != own) {
		return "", false
	}
	return own, true
}

func (k *Keys) spendLogs(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	key, ok := spendOwner(managerOf(r), q.Get("api_key"))
	if !ok {
		forbid(w, "only the proxy admin may read another key's spend logs")
		return
	}
	f := store.SpendFilter{APIKey: key, UserID: q.Get("user_id"), RequestID: q.Get("request_id"), Limit: maxSpendRows}
	var err error
	if f.Start, err = spendDate(q.Get("start_date"), 0); err == nil {
		f.End, err = spendDate(q.Get("end_date"), 24*time.Hour) // end_date's whole day
	}
	if err != nil {
		keyError(w, http.StatusBadRequest, "invalid_request_error", "start_date", err.Error())
		return
	}
	rows, err := k.cfg.Store.SpendLogs(r.Context(), f)
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	out := make([]spendLogJSON, 0, len(rows))
	for _, row := range rows {
		out = append(out, spendLogJSON{RequestID: row.RequestID, CallType: row.CallType, APIKey: row.APIKey,
			Spend: row.Spend, StartTime: row.StartTime.Format(time.RFC3339Nano), EndTime: row.EndTime.Format(time.RFC3339Nano),
			Model: row.Model, MCPNamespacedToolName: row.Model, User: row.UserID, TeamID: row.TeamID,
			EndUser: row.EndUser, Status: row.Status, Metadata: map[string]any{
				"user_api_key_alias": row.KeyAlias, "user_api_key_org_id": row.OrganizationID,
				"mcp_server_name": row.Server, "error_class": row.Fault}})
	}
	writeJSON(w, http.StatusOK, out)
}

// spendDate parses a YYYY-MM-DD date (UTC) plus shift; "" is the zero time.
func spendDate(s string, shift time.Duration) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, &badRequest{param: "date", msg: "dates are YYYY-MM-DD, not " + strconv.Quote(s)}
	}
	return t.Add(shift), nil
}

// dailySpendJSON is one daily_spend row.
type dailySpendJSON struct {
	Date           string  `json:"date"`
	APIKey         string  `json:"api_key"`
	TeamID         string  `json:"team_id"`
	MCPServer      string  `json:"mcp_server_name"`
	Spend          float64 `json:"spend"`
	APIRequests    int64   `json:"api_requests"`
	FailedRequests int64   `json:"failed_requests"`
}

func (k *Keys) spendDaily(w http.ResponseWriter, r *http.Request, _ []byte) {
	q := r.URL.Query()
	key, ok := spendOwner(managerOf(r), q.Get("api_key"))
	if !ok {
		forbid(w, "only the proxy admin may read another key's spend")
		return
	}
	for _, d := range []string{q.Get("start_date"), q.Get("end_date")} {
		if _, err := spendDate(d, 0); err != nil {
			keyError(w, http.StatusBadRequest, "invalid_request_error", "start_date", err.Error())
			return
		}
	}
	rows, err := k.cfg.Store.DailySpends(r.Context(), store.DailySpendFilter{APIKey: key, TeamID: q.Get("team_id"),
		Server: q.Get("mcp_server_name"), Start: q.Get("start_date"), End: q.Get("end_date")})
	if err != nil {
		k.fail(r.Context(), w, err)
		return
	}
	out := make([]dailySpendJSON, 0, len(rows))
	for _, d := range rows {
		out = append(out, dailySpendJSON{Date: d.Date, APIKey: d.APIKey, TeamID: d.TeamID, MCPServer: d.Server,
			Spend: d.Spend, APIRequests: d.APIRequests, FailedRequests: d.FailedRequests})
	}
	writeJSON(w, http.StatusOK, out)
}
