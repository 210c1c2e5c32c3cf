-- +goose Up
-- Portable column types: TEXT, BIGINT (times are unix milliseconds) and BOOLEAN, so this one
-- file migrates SQLite and Postgres alike, under the same queries.
CREATE TABLE keys (
    token                 TEXT    PRIMARY KEY,          -- hex SHA-256 of the secret
    key_name              TEXT    NOT NULL,             -- "sk-...abcd": display only
    key_alias             TEXT    UNIQUE,               -- NULL when unset
    user_id               TEXT    NOT NULL DEFAULT '',
    team_id               TEXT    NOT NULL DEFAULT '',
    organization_id       TEXT    NOT NULL DEFAULT '',
    metadata              TEXT    NOT NULL DEFAULT '{}', -- JSON object
    object_permission     TEXT    NOT NULL DEFAULT '{}', -- JSON object
    expires               BIGINT,                       -- NULL: never
    blocked               BOOLEAN NOT NULL DEFAULT FALSE,
    rpm_limit             BIGINT,
    max_parallel_requests BIGINT,
    mcp_rpm_limit         TEXT    NOT NULL DEFAULT '{}', -- JSON object {server: n}
    created_at            BIGINT  NOT NULL,
    updated_at            BIGINT  NOT NULL
);
CREATE INDEX keys_user_id ON keys (user_id);
CREATE INDEX keys_team_id ON keys (team_id);

-- +goose Down
DROP TABLE keys;
