-- +goose Up
-- Tool-definition pins: per server and tool, the digest of the definition an admin approved (or
-- the gateway first saw), and, while the tool is quarantined, why and the digest it changed to.
-- tool '' is the server's own row: the server's tools are pinned though its config does not say
-- so (POST /v1/mcp/server/{id}/pin of the whole server). parts and pending_parts are JSON
-- objects {part: sha256 hex}; changed is a JSON array of part names.
CREATE TABLE mcp_tool_pins (
    server         TEXT    NOT NULL,
    tool           TEXT    NOT NULL,
    digest         TEXT    NOT NULL DEFAULT '',
    parts          TEXT    NOT NULL DEFAULT '{}',
    pending_digest TEXT    NOT NULL DEFAULT '',
    pending_parts  TEXT    NOT NULL DEFAULT '{}',
    quarantine     TEXT    NOT NULL DEFAULT '',
    changed        TEXT    NOT NULL DEFAULT '[]',
    updated_at     BIGINT  NOT NULL,
    updated_by     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (server, tool)
);

-- The audit trail of pins: one row per pin, quarantine, approval or removal.
CREATE TABLE mcp_tool_pin_events (
    event_id   TEXT   PRIMARY KEY,
    server     TEXT   NOT NULL,
    tool       TEXT   NOT NULL,
    event      TEXT   NOT NULL,
    changed    TEXT   NOT NULL DEFAULT '[]',
    actor      TEXT   NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX mcp_tool_pin_events_server ON mcp_tool_pin_events (server, created_at);

-- +goose Down
DROP TABLE mcp_tool_pin_events;
DROP TABLE mcp_tool_pins;
