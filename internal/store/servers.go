package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrServerExists: another stored server already has that server_id or server_name.
var ErrServerExists = errors.New("mcp server already exists")

// serversCacheKey is the cache key every write of mcp_servers touches: nothing is cached under
// it, but its notification tells the other replicas to re-read the stored servers.
const serversCacheKey = "mcpservers:*"

// MCPServer is one stored MCP server, LiteLLM's LiteLLM_MCPServerTable. Credential values
// (Credentials.AuthValue, Credentials.ClientSecret, StaticHeaders' and Env's values) are kept
// exactly as given: the caller seals them first.
type MCPServer struct {
	ServerID    string
	ServerName  string // unique; the server's name in the gateway
	Alias       string
	Description string

	URL, Transport, Command string
	Args                    []string
	Env                     map[string]string

	AuthType         string
	Credentials      ServerCredentials
	AuthHeaderName   string
	OAuth2Flow       string
	TokenURL         string
	AuthorizationURL string

	AccessGroups    []string // mcp_access_groups
	AllowedTools    []string
	DisallowedTools []string
	ExtraHeaders    []string
	StaticHeaders   map[string]string
	MCPInfo         json.RawMessage // a JSON object

	Timeout               *time.Duration // whole milliseconds
	MaxConcurrentRequests *int64
	RPM                   *int64
	AllowAllKeys          bool

	// Settings are the config file's settings LiteLLM's table has no column for.
	Settings ServerSettings

	CreatedAt, UpdatedAt time.Time
	CreatedBy, UpdatedBy string
}

// ServerCredentials is LiteLLM's MCPCredentials.
type ServerCredentials struct {
	AuthValue    string   `json:"auth_value,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// ServerSettings are a stored server's settings that LiteLLM's table has no column for, kept
// in one JSON column (settings) under their mcp_servers names. The zero value sets none.
type ServerSettings struct {
	SpecPath           string   `json:"spec_path,omitempty"`
	ProtocolVersion    string   `json:"protocol_version,omitempty"`
	ForwardIdentity    string   `json:"forward_identity,omitempty"`
	AllowElicitation   bool     `json:"allow_elicitation,omitempty"`
	AllowSampling      bool     `json:"allow_sampling,omitempty"`
	PinToolDefinitions bool     `json:"pin_tool_definitions,omitempty"`
	PinnedTools        []string `json:"pinned_tools,omitempty"`
	Guardrails         []string `json:"guardrails,omitempty"`
}

const serverColumns = `server_id, server_name, alias, description, url, transport, command, args, env,
	auth_type, credentials, auth_header_name, oauth2_flow, token_url, authorization_url,
	mcp_access_groups, allowed_tools, disallowed_tools, extra_headers, static_headers, mcp_info,
	timeout_ms, max_concurrent_requests, rpm, allow_all_keys, settings, created_at, updated_at, created_by, updated_by`

// CreateServer stores sv; a server_id or server_name in use is a RefError matching
// ErrServerExists and nothing is written. A server without ServerID gets a fresh UUID.
func (s *Store) CreateServer(ctx context.Context, sv MCPServer) (MCPServer, error) {
	if sv.ServerID == "" {
		sv.ServerID = NewID()
	}
	now := s.nowMillis()
	sv.CreatedAt, sv.UpdatedAt = now, now
	if sv.UpdatedBy == "" {
		sv.UpdatedBy = sv.CreatedBy
	}
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(serversCacheKey)
		if err := serverFree(ctx, tx, "server_id", sv.ServerID); err != nil {
			return err
		}
		if err := serverFree(ctx, tx, "server_name", sv.ServerName); err != nil {
			return err
		}
		args := append([]any{sv.ServerID}, serverValues(sv)...)
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_servers (`+serverColumns+`) VALUES
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
			 $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)`, args...)
		if err != nil {
			return serverUnique(fmt.Errorf("store: creating an mcp server: %w", err), sv)
		}
		return nil
	})
	if err != nil {
		return MCPServer{}, err
	}
	return sv, nil
}

// serverFree refuses a server_id or server_name already stored.
func serverFree(ctx context.Context, tx *tx, col, v string) error {
	taken, err := exists(ctx, tx, `SELECT COUNT(*) FROM mcp_servers WHERE `+col+` = $1`, v)
	if err != nil || !taken {
		return err
	}
	return refErr(ErrServerExists, col, "%s '%s' is already a stored mcp server's", col, v)
}

// serverUnique turns the schema's own UNIQUE failure (a writer racing past serverFree) into
// ErrServerExists.
func serverUnique(err error, sv MCPServer) error {
	switch {
	case uniqueViolation(err, "mcp_servers", "server_name"):
		return refErr(ErrServerExists, "server_name", "server_name '%s' is already a stored mcp server's", sv.ServerName)
	case uniqueViolation(err, "mcp_servers", "server_id") || uniqueViolation(err, "mcp_servers", "pkey"):
		return refErr(ErrServerExists, "server_id", "server_id '%s' is already a stored mcp server's", sv.ServerID)
	}
	return err
}

// serverValues are sv's columns after server_id, in serverColumns' order.
func serverValues(sv MCPServer) []any {
	var timeout any
	if sv.Timeout != nil {
		timeout = sv.Timeout.Milliseconds()
	}
	return []any{sv.ServerName, sv.Alias, sv.Description, sv.URL, sv.Transport, sv.Command,
		jsonText(sv.Args, "[]"), jsonText(sv.Env, "{}"), sv.AuthType, jsonText(sv.Credentials, "{}"),
		sv.AuthHeaderName, sv.OAuth2Flow, sv.TokenURL, sv.AuthorizationURL,
		jsonText(sv.AccessGroups, "[]"), jsonText(sv.AllowedTools, "[]"), jsonText(sv.DisallowedTools, "[]"),
		jsonText(sv.ExtraHeaders, "[]"), jsonText(sv.StaticHeaders, "{}"), metadataText(sv.MCPInfo),
		timeout, int64Arg(sv.MaxConcurrentRequests), int64Arg(sv.RPM), sv.AllowAllKeys, jsonText(sv.Settings, "{}"),
		sv.CreatedAt.UnixMilli(), sv.UpdatedAt.UnixMilli(), sv.CreatedBy, sv.UpdatedBy}
}

// jsonText is v as JSON, or empty when v is nil or empty.
func jsonText(v any, empty string) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty
	}
	return string(b)
}

func int64Arg(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// GetServer returns the stored server with id (a RefError matching ErrNotFound when none).
func (s *Store) GetServer(ctx context.Context, id string) (MCPServer, error) {
	return readServer(ctx, s.db, id)
}

func readServer(ctx context.Context, q querier, id string) (MCPServer, error) {
	return queryRow(ctx, q, "an mcp server", scanServer, notFound("server_id", "mcp server '%s' not found", id),
		`SELECT `+serverColumns+` FROM mcp_servers WHERE server_id = $1`, id)
}

// ListServers returns every stored server, oldest first.
func (s *Store) ListServers(ctx context.Context) ([]MCPServer, error) {
	return queryRows(ctx, s.db, "listing mcp servers", scanServer,
		`SELECT `+serverColumns+` FROM mcp_servers ORDER BY created_at, server_id`)
}

// UpdateServer applies change to the stored server with id in one transaction and returns
// it as stored. change may not alter ServerID; a server_name another server has is a RefError
// matching ErrServerExists; an error from change is returned as it is, writing nothing.
func (s *Store) UpdateServer(ctx context.Context, id string, change func(*MCPServer) error) (MCPServer, error) {
	var out MCPServer
	err := s.inTx(ctx, func(tx *tx) error {
		tx.touch(serversCacheKey)
		sv, err := readServer(ctx, tx, id)
		if err != nil {
			return err
		}
		oldName := sv.ServerName
		if err := change(&sv); err != nil {
			return err
		}
		sv.ServerID, sv.UpdatedAt = id, s.nowMillis()
		if sv.ServerName != oldName {
			if err := serverFree(ctx, tx, "server_name", sv.ServerName); err != nil {
				return err
			}
		}
		v := serverValues(sv) // created_at ($26) and created_by ($28) stay as they are
		args := append(append(v[:25:25], v[26], v[28]), id)
		_, err = tx.ExecContext(ctx, `UPDATE mcp_servers SET server_name = $1, alias = $2, description = $3,
			url = $4, transport = $5, command = $6, args = $7, env = $8, auth_type = $9, credentials = $10,
			auth_header_name = $11, oauth2_flow = $12, token_url = $13, authorization_url = $14,
			mcp_access_groups = $15, allowed_tools = $16, disallowed_tools = $17, extra_headers = $18,
			static_headers = $19, mcp_info = $20, timeout_ms = $21, max_concurrent_requests = $22, rpm = $23,
			allow_all_keys = $24, settings = $25, updated_at = $26, updated_by = $27 WHERE server_id = $28`, args...)
		if err != nil {
			return serverUnique(fmt.Errorf("store: updating an mcp server: %w", err), sv)
		}
		out = sv
		return nil
	})
	return out, err
}

// DeleteServer deletes the stored server with id (a RefError matching ErrNotFound when none).
func (s *Store) DeleteServer(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *tx) error {
		tx.touch(serversCacheKey)
		return execOne(ctx, tx, "deleting an mcp server", notFound("server_id", "mcp server '%s' not found", id),
			`DELETE FROM mcp_servers WHERE server_id = $1`, id)
	})
}

// scanServer scans one row of serverColumns.
func scanServer(r scanner) (MCPServer, error) {
	var sv MCPServer
	var args, env, creds, groups, allowed, disallowed, extra, static, info, settings string
	var timeout, maxConc, rpm sql.NullInt64
	var created, updated int64
	err := r.Scan(&sv.ServerID, &sv.ServerName, &sv.Alias, &sv.Description, &sv.URL, &sv.Transport, &sv.Command,
		&args, &env, &sv.AuthType, &creds, &sv.AuthHeaderName, &sv.OAuth2Flow, &sv.TokenURL, &sv.AuthorizationURL,
		&groups, &allowed, &disallowed, &extra, &static, &info, &timeout, &maxConc, &rpm, &sv.AllowAllKeys,
		&settings, &created, &updated, &sv.CreatedBy, &sv.UpdatedBy)
	if err != nil {
		return sv, err
	}
	for _, f := range []struct {
		text string
		into any
	}{{args, &sv.Args}, {env, &sv.Env}, {creds, &sv.Credentials}, {groups, &sv.AccessGroups},
		{allowed, &sv.AllowedTools}, {disallowed, &sv.DisallowedTools}, {extra, &sv.ExtraHeaders}, {static, &sv.StaticHeaders},
		{settings, &sv.Settings}} {
		if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
			return sv, fmt.Errorf("mcp server %q: a JSON column does not parse: %w", sv.ServerID, err)
		}
	}
	sv.MCPInfo = json.RawMessage(info)
	if timeout.Valid {
		d := time.Duration(timeout.Int64) * time.Millisecond
		sv.Timeout = &d
	}
	sv.MaxConcurrentRequests, sv.RPM = nullInt(maxConc), nullInt(rpm)
	sv.CreatedAt, sv.UpdatedAt = fromMillis(created), fromMillis(updated)
	return sv, nil
}

// OnServersChanged makes f run whenever another replica may have changed the stored servers
// (Postgres: a notification naming them, or the invalidation listener reconnecting, since
// notifications may have been lost meanwhile). f runs on the listener's goroutine and must
// return quickly. SQLite has a single replica and never calls f. A later call replaces f.
func (s *Store) OnServersChanged(f func()) {
	s.onServers.Store(&f)
}

// serversChanged runs the OnServersChanged hook, if any.
func (s *Store) serversChanged() {
	if f := s.onServers.Load(); f != nil && *f != nil {
		(*f)()
	}
}
