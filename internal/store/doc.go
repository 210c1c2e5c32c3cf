// Package store is the gateway's persistent state: today the virtual keys minted by the
// /key/* management API. It is one database/sql store over the embedded SQLite file
// <data-dir>/mcpgw.db (modernc.org/sqlite: pure Go, so CGO_ENABLED=0 builds keep working).
//
// Design decisions:
//
//   - Schema and migrations: versioned SQL files embedded in the binary (migrations/, one set for both dialects),
//     applied at start by goose's Provider API (no global registry). The schema uses only
//     portable types (TEXT, BIGINT unix milliseconds, BOOLEAN, JSON kept as TEXT) and the
//     queries use $n placeholders, which SQLite and Postgres both read, so a Postgres dialect
//     is a second migrations directory and a driver (pgx/v5/stdlib) behind the same queries;
//     it is not built yet, and the gateway refuses to start with DATABASE_URL set rather
//     than silently using SQLite.
//   - SQLite settings: WAL journal (readers never wait for the writer), busy_timeout 5 s (a
//     write waits for the write lock instead of failing), BEGIN IMMEDIATE transactions (a
//     read-then-write transaction cannot deadlock on lock upgrade).
//   - Only a hash of each key is stored: the hex SHA-256 of the secret, which is also the
//     key's id ("token", as LiteLLM calls it; LiteLLM stores a SHA-256 hash too). A secret
//     is "sk-" and 256 random bits, so a fast unsalted hash cannot be reversed by search; a
//     slow KDF (bcrypt, argon2) would protect nothing more and would cost CPU on every
//     authenticated request. The secret is returned once by Generate and never kept.
//   - Every write runs in one transaction; a failure (a duplicate key_alias, one missing key
//     of several to delete) rolls it back, so bad input never leaves a partial write.
//     key_alias is UNIQUE in the schema as well as checked first, so two replicas racing on
//     one alias cannot both win.
//   - Lookup (authentication) goes through a per-replica cache: a lookup, found or not, is
//     reused for Options.CacheTTL (default 1 s) and at most Options.CacheSize entries (default
//     10 000; when full an arbitrary entry is evicted). This replica's own writes (Generate,
//     Update, Delete, SetBlocked) forget the token at once; another replica's change is seen within the
//     TTL. Get (the management API) always reads the database.
//   - object_permission is stored with all five of LiteLLM's fields (mcp_servers,
//     mcp_access_groups, mcp_tool_permissions, mcp_toolsets, blocked_tools); the gateway's
//     policy enforces the first three today, and the management API refuses a non-empty
//     mcp_toolsets or blocked_tools until they are enforced. rpm_limit, max_parallel_requests and
//     mcp_rpm_limit are stored for the limits work and not enforced yet.
//   - Regenerate changes a key's primary key (its token is the hash of the secret) in place, in
//     the transaction that applies the caller's other changes, and records both the old and the
//     new token as touched: the old secret's cached lookup is forgotten on commit, and a
//     "not found" cached for the new token (a guess before it existed) cannot outlive it.
//   - Organisations, teams (with team_members: user, role admin|user), users and end users
//     (LiteLLM's customers) live beside the keys (migrations/00002), each with the same
//     object_permission. Referential rules are kept by the store inside each write's
//     transaction rather than by FOREIGN KEY constraints ("" means "none" in the id columns,
//     and keys written before 00002 carry team ids no table held): a key's, team's or user's
//     team_id/organization_id must exist when set or changed (a RefError matching ErrForeign,
//     naming the field); deleting a team or a user deletes its keys and memberships, as
//     LiteLLM does; deleting an organisation that teams, users or keys still belong to is
//     refused (ErrInUse; the API answers 409 Conflict: the request is well-formed, what is
//     stored forbids it, and deleting a whole tree of teams and keys as a side effect would
//     surprise). Against a concurrent writer on Postgres, a write that refers to a row
//     first locks it (a no-op UPDATE, which SQLite's single writer makes redundant), and a
//     delete removes the parent row before looking for its children, so a reference written
//     meanwhile is either seen by the delete or refused. Every write touches the cache key
//     of each row it changes ("team:", "org:", "user:", "enduser:" and the keys it deletes),
//     and LookupTeam/LookupOrganization/LookupUser/LookupEndUser go through the same cache
//     as Lookup (found or not, Options.CacheTTL, Options.CacheSize). Ids not given are random
//     UUIDs; team_alias and organization_alias are UNIQUE like key_alias.
package store
