-- +goose Up
-- Organisations, teams, their members, users and end users (LiteLLM's customers). The same
-- portable types as 00001. Referential rules (a team's organisation exists, deleting a team
-- deletes its keys and memberships, ...) are kept by the store inside each write
-- transaction, not by FOREIGN KEY constraints: "" means "none" in the id columns, and
-- keys rows written before this migration carry ids no table held.
CREATE TABLE organizations (
    organization_id    TEXT   PRIMARY KEY,
    organization_alias TEXT   NOT NULL UNIQUE,
    metadata           TEXT   NOT NULL DEFAULT '{}', -- JSON object
    object_permission  TEXT   NOT NULL DEFAULT '{}', -- JSON object
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);

CREATE TABLE teams (
    team_id               TEXT    PRIMARY KEY,
    team_alias            TEXT    UNIQUE,               -- NULL when unset
    organization_id       TEXT    NOT NULL DEFAULT '',
    metadata              TEXT    NOT NULL DEFAULT '{}',
    object_permission     TEXT    NOT NULL DEFAULT '{}',
    blocked               BOOLEAN NOT NULL DEFAULT FALSE,
    rpm_limit             BIGINT,
    max_parallel_requests BIGINT,
    mcp_rpm_limit         TEXT    NOT NULL DEFAULT '{}', -- JSON object {server: n}
    created_at            BIGINT  NOT NULL,
    updated_at            BIGINT  NOT NULL
);
CREATE INDEX teams_organization_id ON teams (organization_id);

CREATE TABLE users (
    user_id           TEXT   PRIMARY KEY,
    user_email        TEXT   NOT NULL DEFAULT '',
    user_alias        TEXT   NOT NULL DEFAULT '',
    user_role         TEXT   NOT NULL, -- proxy_admin, proxy_admin_viewer, internal_user, internal_user_viewer
    organization_id   TEXT   NOT NULL DEFAULT '',
    metadata          TEXT   NOT NULL DEFAULT '{}',
    object_permission TEXT   NOT NULL DEFAULT '{}',
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX users_organization_id ON users (organization_id);

CREATE TABLE team_members (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role    TEXT NOT NULL, -- admin or user
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user_id ON team_members (user_id);

CREATE TABLE end_users (
    user_id           TEXT    PRIMARY KEY,
    alias             TEXT    NOT NULL DEFAULT '',
    blocked           BOOLEAN NOT NULL DEFAULT FALSE,
    metadata          TEXT    NOT NULL DEFAULT '{}',
    object_permission TEXT    NOT NULL DEFAULT '{}',
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL
);

CREATE INDEX keys_organization_id ON keys (organization_id);

-- +goose Down
DROP INDEX keys_organization_id;
DROP TABLE end_users;
DROP TABLE team_members;
DROP TABLE users;
DROP TABLE teams;
DROP TABLE organizations;
