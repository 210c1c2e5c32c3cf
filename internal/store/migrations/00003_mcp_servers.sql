-- +goose Up
-- MCP servers managed through /v1/mcp/server (general_settings.store_model_in_db), with
-- LiteLLM's LiteLLM_MCPServerTable fields. The same portable types as 00001: lists and maps
-- are JSON kept as TEXT, times are unix milliseconds. Credential values (credentials'
-- auth_value and client_secret, static_headers' and env's values) are stored as the gateway
-- hands them over: sealed (internal/secretbox), or an os.environ/NAME reference.
CREATE TABLE mcp_servers (
    server_id               TEXT    PRIMARY KEY,
    server_name             TEXT    NOT NULL UNIQUE,
    alias                   TEXT    NOT NULL DEFAULT '',
    description             TEXT    NOT NULL DEFAULT '',
    url                     TEXT    NOT NULL DEFAULT '',
    transport               TEXT    NOT NULL DEFAULT '',
    command                 TEXT    NOT NULL DEFAULT '',
    args                    TEXT    NOT NULL DEFAULT '[]', -- JSON array
    env                     TEXT    NOT NULL DEFAULT '{}', -- JSON object
    auth_type               TEXT    NOT NULL DEFAULT '',
    credentials             TEXT    NOT NULL DEFAULT '{}', -- JSON object
    auth_header_name        TEXT    NOT NULL DEFAULT '',
    oauth2_flow             TEXT    NOT NULL DEFAULT '',
    token_url               TEXT    NOT NULL DEFAULT '',
    authorization_url       TEXT    NOT NULL DEFAULT '',
    mcp_access_groups       TEXT    NOT NULL DEFAULT '[]',
    allowed_tools           TEXT    NOT NULL DEFAULT '[]',
    disallowed_tools        TEXT    NOT NULL DEFAULT '[]',
    extra_headers           TEXT    NOT NULL DEFAULT '[]',
    static_headers          TEXT    NOT NULL DEFAULT '{}',
    mcp_info                TEXT    NOT NULL DEFAULT '{}',
    timeout_ms              BIGINT,
    max_concurrent_requests BIGINT,
    rpm                     BIGINT,
    allow_all_keys          BOOLEAN NOT NULL DEFAULT FALSE,
    created_at              BIGINT  NOT NULL,
    updated_at              BIGINT  NOT NULL,
    created_by              TEXT    NOT NULL DEFAULT '',
    updated_by              TEXT    NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE mcp_servers;
