-- +goose Up
-- Spend and audit logs: one spend_logs row per tool call or listing, with LiteLLM's
-- LiteLLM_SpendLogs column names where they apply (start_time/end_time as unix milliseconds,
-- api_key the key's hash, never a secret); daily_spend, the rollup per day (UTC, YYYY-MM-DD),
-- key, team and server; and spend/max_budget on keys and teams. Arguments and results are
-- never stored.
CREATE TABLE spend_logs (
    request_id  TEXT             PRIMARY KEY,
    call_type   TEXT             NOT NULL, -- call_mcp_tool or list_mcp_tools
    model       TEXT             NOT NULL DEFAULT '', -- the namespaced tool name, as LiteLLM logs it
    mcp_server  TEXT             NOT NULL DEFAULT '',
    api_key     TEXT             NOT NULL DEFAULT '', -- the key's hash
    key_alias   TEXT             NOT NULL DEFAULT '',
    team_id     TEXT             NOT NULL DEFAULT '',
    user_id     TEXT             NOT NULL DEFAULT '', -- LiteLLM's "user"
    end_user    TEXT             NOT NULL DEFAULT '',
    organization_id TEXT         NOT NULL DEFAULT '',
    status      TEXT             NOT NULL, -- success or failure
    fault       TEXT             NOT NULL DEFAULT '', -- the failure's class, "" on success
    spend       DOUBLE PRECISION NOT NULL DEFAULT 0,
    start_time  BIGINT           NOT NULL,
    end_time    BIGINT           NOT NULL
);
CREATE INDEX spend_logs_start_time ON spend_logs (start_time);
CREATE INDEX spend_logs_api_key ON spend_logs (api_key, start_time);
CREATE INDEX spend_logs_user_id ON spend_logs (user_id, start_time);

CREATE TABLE daily_spend (
    date       TEXT             NOT NULL,
    api_key    TEXT             NOT NULL,
    team_id    TEXT             NOT NULL,
    mcp_server TEXT             NOT NULL,
    spend      DOUBLE PRECISION NOT NULL DEFAULT 0,
    api_requests   BIGINT       NOT NULL DEFAULT 0,
    failed_requests BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (date, api_key, team_id, mcp_server)
);

ALTER TABLE keys ADD COLUMN spend DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE keys ADD COLUMN max_budget DOUBLE PRECISION;
ALTER TABLE teams ADD COLUMN spend DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE teams ADD COLUMN max_budget DOUBLE PRECISION;

-- +goose Down
ALTER TABLE teams DROP COLUMN max_budget;
ALTER TABLE teams DROP COLUMN spend;
ALTER TABLE keys DROP COLUMN max_budget;
ALTER TABLE keys DROP COLUMN spend;
DROP TABLE daily_spend;
DROP TABLE spend_logs;
