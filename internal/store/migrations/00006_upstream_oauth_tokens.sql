-- +goose Up
-- Per-user OAuth tokens for upstream servers whose credential is the caller's own
-- (auth_type oauth2, oauth2_flow authorization_code): one row per (user, server). sealed holds
-- the access token, refresh token and expiry as one value encrypted with the salt-derived key
-- and bound to the row's user and server, so the database alone reveals no token; expires_at
-- (unix milliseconds, 0 for none) is kept in clear for housekeeping only.
CREATE TABLE upstream_oauth_tokens (
    user_id    TEXT   NOT NULL,
    server     TEXT   NOT NULL,
    sealed     TEXT   NOT NULL,
    expires_at BIGINT NOT NULL DEFAULT 0,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, server)
);

-- +goose Down
DROP TABLE upstream_oauth_tokens;
