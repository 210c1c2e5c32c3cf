// Package store is the gateway's persistent state: the virtual keys minted by the /key/*
// management API, their teams, users, organisations and end users, and the MCP servers
// managed through /v1/mcp/server. It is one database/sql store over either the embedded SQLite file
// <data-dir>/mcpgw.db (modernc.org/sqlite: pure Go, so CGO_ENABLED=0 builds keep working) or
// a Postgres database shared by every replica (OpenPostgres; jackc/pgx/v5 through its
// database/sql driver, pgx/v5/stdlib).
//
// Design decisions:
//
//   - Schema and migrations: versioned SQL files embedded in the binary (migrations/, one set
//     for both dialects), applied at start by goose's Provider API (no global registry; on
//     Postgres under goose's advisory session lock, so replicas starting together apply each
//     migration once). The schema uses only portable types (TEXT, BIGINT unix milliseconds,
//     BOOLEAN, JSON kept as TEXT) and the queries use $n placeholders, which SQLite and
//     Postgres both read, so both backends run the same queries.
//   - database/sql over pgx's native API: the queries, the transaction helper and the row
//     scanning stay one code path for both backends; pgx's native pool and types would buy
//     nothing the store needs. Only the invalidation listener uses a native pgx.Conn, because
//     LISTEN needs one dedicated connection that database/sql's pool would hand to others.
//   - SQLite settings: WAL journal (readers never wait for the writer), busy_timeout 5 s (a
//     write waits for the write lock instead of failing), BEGIN IMMEDIATE transactions (a
//     read-then-write transaction cannot deadlock on lock upgrade).
//   - SQLite durability: keys, teams, users, servers and every other write commit with
//     SQLite's default synchronous=FULL (the WAL is fsynced at each commit). RecordSpend
//     writes through a connection of its own (one, so batches queue in the spend writer)
//     opened with synchronous=NORMAL, a per-connection setting: its commits are not fsynced,
//     the WAL is synced at checkpoints and by the next FULL commit of any connection. In WAL
//     mode that never corrupts the database; a power loss or an OS crash (not a crash of the
//     gateway, whose writes the OS already holds) may lose the spend batches committed
//     since the last sync, i.e. the last moments' spend_logs rows and the spend they added
//     to keys and teams. The fsync was most of a spend commit's cost (measured in
//     docs/benchmarks.md, "Control plane cost, round 2"), paid a few times a second by
//     every busy gateway; losing a second of audit rows on a power cut is the price, and a
//     deployment that cannot pay it keeps its store on Postgres. No config switch: nobody
//     has asked for spend rows more durable than the keys' own database on Postgres.
//     Postgres writes spend with the server's synchronous_commit, like every other write.
//   - Postgres writes take a transaction-scoped advisory lock (pg_advisory_xact_lock) first:
//     write transactions run one at a time across every replica, as on SQLite, so a
//     read-then-write (Update, the key_alias check) sees every earlier write and no concurrent
//     one, under Postgres' default READ COMMITTED, without retry loops. Writes are rare
//     (management calls); lookups never take the lock.
//   - Pool bounds on Postgres, per Store: DefaultMaxOpenConns (10, Options.MaxOpenConns) pooled
//     connections, all allowed to stay idle; each replaced after 30 min, or after 5 min idle,
//     so a failover or a moved proxy is followed; plus the listener's one connection.
//   - Only a hash of each key is stored: the hex SHA-256 of the secret, which is also the
//     key's id ("token", as LiteLLM calls it; LiteLLM stores a SHA-256 hash too). A secret
//     is "sk-" and 256 random bits, so a fast unsalted hash cannot be reversed by search; a
//     slow KDF (bcrypt, argon2) would protect nothing more and would cost CPU on every
//     authenticated request. The secret is returned once by Generate and never kept.
//   - Every write runs in one transaction; a failure (a duplicate key_alias, one missing key
//     of several to delete) rolls it back, so bad input never leaves a partial write.
//     key_alias is UNIQUE in the schema as well as checked first; the constraint's failure
//     (SQLite's message, or Postgres' SQLSTATE 23505 with the constraint's default name) is
//     ErrDuplicateAlias too, so writers racing on one alias end in one key and
//     ErrDuplicateAlias for the others.
//   - Lookup (authentication) goes through a per-replica cache: a lookup, found or not, is
//     reused for Options.CacheTTL (default 1 s); rows found and "no such row" answers are
//     kept apart, each at most Options.CacheSize entries (default 10 000; when full an
//     arbitrary entry of that kind is evicted), so invented keys or end-user ids (anyone can
//     send them) only push out other invented names. Rejected: one shared bound, which let
//     such a stream flush every real caller's cached rows. Cached rows of every kind share one
//     key format, "<kind>:<id>" ("key:<token>", "team:<id>", ...). This replica's own writes
//     (Generate, Update, Delete, SetBlocked) forget what they touched at once. Get (the
//     management API) always reads the database. Every forget starts a new cache generation,
//     and a lookup that read the database before it is not cached, so a read racing a write
//     cannot put back the row the write invalidated. A value derived from several cached
//     lookups (internal/app's resolved store key) may be kept by its caller on the same
//     terms: CacheState gives the generation to check and the TTL, TrackReads the time the
//     oldest lookup it read was read, so the derived value is never staler than its rows.
//   - Other replicas' writes, on SQLite: seen within the TTL. On Postgres: LISTEN/NOTIFY,
//     because it needs nothing beyond the database every replica already shares. A write
//     transaction sends pg_notify('mcpgw_store', payload) before it commits, the payload the
//     writing store's random origin, "|" and a JSON array of the cache keys it touched (split
//     to stay under Postgres' 8000-byte limit; a key that cannot fit turns into "*", forget
//     everything); Postgres delivers it to every listener only if and when the transaction
//     commits. Each Store keeps one LISTEN connection (a pgx.Conn outside the pool) whose
//     goroutine forgets the named keys, so a block on one replica is refused on all within
//     milliseconds, however long the TTL. A store skips its own notifications: its writes are
//     forgotten on commit already, and forgetting them again when the echo arrives would
//     throw away lookups cached since the commit.
//   - The reads behind the lookup cache (a key, team, user, organisation or end user by id,
//     with its memberships) and a server's tool pins (the pin refresh) run, on SQLite,
//     statements prepared once (readStmts; database/sql prepares each again on every pooled
//     connection it runs on): modernc parses and plans SQL handed to it as text each time,
//     which was most of a cache miss's CPU, and a miss comes once a TTL per key on the
//     request path (docs/benchmarks.md, h81-keymemo; its −20…−66 % per read is a reused
//     connection's: the SQLite pool keeps database/sql's two idle connections, and reads
//     beyond two at once open connections that prepare each statement anew). What is read
//     is unchanged: a prepared
//     statement reads the database as it is when it runs. Postgres is left as it was (pgx
//     caches statements per connection). Rejected: PRAGMA data_version to keep a cached row
//     past the TTL while nothing changed, because data_version changes with any other
//     connection's commit, and the spend writer commits on its own connection about once a
//     second under traffic, so it would seldom say "unchanged"; asking the spend connection
//     instead (whose own commits do not change it) would queue a request behind a spend batch.
//   - The listener's connection can drop, and notifications sent meanwhile are lost: the
//     cache is then cleared and off (every lookup reads the database) until a new connection
//     listens again, then cleared once more and back on. Reconnects back off from 100 ms,
//     doubling to 10 s; an idle connection is pinged every 30 s, so a silently dead one is
//     found. The goroutine recovers a panic (logged without its value; the connection is
//     replaced) and ends, with its connection, when the Store is closed.
//   - Errors from OpenPostgres never contain the URL's password: an unparsable URL gets a
//     fixed message (pgx redacts passwords from its parse errors only on a best-effort basis),
//     and other errors have the password replaced should a driver or server quote it.
//   - object_permission is stored with all five of LiteLLM's fields (mcp_servers,
//     mcp_access_groups, mcp_tool_permissions, mcp_toolsets, blocked_tools); the gateway's
//     policy enforces the first three today, and the management API refuses a non-empty
//     mcp_toolsets or blocked_tools until they are enforced. rpm_limit, max_parallel_requests and
//     mcp_rpm_limit are stored as given; internal/app enforces them on tool calls.
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
//   - MCP servers (migrations/00003, table mcp_servers) carry LiteLLM's LiteLLM_MCPServerTable
//     fields; lists and maps are JSON in TEXT columns. The store keeps credential values as it is
//     given them: internal/app seals them (internal/secretbox) before they reach it, so neither
//     this package nor the database ever holds the key. server_id is the primary key and
//     server_name UNIQUE (checked first, the constraint catching a racing writer, both
//     ErrServerExists). Every write of the table touches the cache key "mcpservers:*", which
//     nothing caches: its notification is how the other replicas learn that the stored
//     servers changed. The listener runs the OnServersChanged hook for such a notification
//     from another store, for an unparsable one or "*" (it may have named them), and after
//     reconnecting (notifications sent while it was down are lost); the hook must return at
//     once (internal/app queues a re-read and Apply on a goroutine of its own). SQLite serves
//     one replica and never runs the hook. The config file's server settings LiteLLM's table
//     has no column for (spec_path, protocol_version, forward_identity, allow_elicitation,
//     allow_sampling, pin_tool_definitions, pinned_tools, guardrails; ServerSettings) are one
//     JSON object in the settings column (migrations/00008), keyed by their mcp_servers names:
//     a column each was rejected because every setting the config grows would cost a migration
//     on both databases, and nothing queries them (the gateway reads every row whole). Rows
//     stored before 00008 read '{}', no setting, which is what they meant.
//   - Spend (migrations/00004): spend_logs holds one row per tool call or listing
//     (LiteLLM_SpendLogs' column names where they apply: request_id, call_type, model,
//     api_key, team_id, user, end_user, spend, start/end time; plus mcp_server, key_alias,
//     status and fault), daily_spend the rollup per UTC day, key, team and server, and keys
//     and teams gain spend and max_budget. RecordSpend writes a batch in one transaction:
//     multi-row INSERTs of at most 500 rows (request_id a time-ordered UUID, NewTimeID, so
//     rows append to the primary key's index: a random one put each row of a batch on a
//     page of its own, and a commit wrote one WAL page per row; on SQLite through prepared
//     INSERTs of 1, 2, 4, … 256 rows kept on the spend connection, a batch being the fewest
//     of them its size adds up to, because parsing a fresh 500-row INSERT was a third of a
//     batch's CPU: 15 → 10.5 µs per row, docs/benchmarks.md, h43-defaultpath; SQLite's are
//     INSERT OR FAIL, which keeps no statement journal of the pages a statement writes (a
//     failing row still rolls the whole batch back: the transaction ends in error), and bind
//     NULL for an empty text, coalesced to the empty text, so none is copied into SQLite's allocator
//     for it (together 8–15 % per row, docs/benchmarks.md, h63-ctlcost; Postgres
//     parses its one statement per 500 rows server-side), one UPDATE per key and per team charged, one
//     upsert (INSERT ... ON CONFLICT DO UPDATE, which both backends read) per rollup row (on
//     SQLite prepared once on the spend connection too: parsing the upsert each batch cost
//     ~175 of a one-row batch's ~730 cpu-µs, docs/benchmarks.md, h75-spendcommit). It
//     touches the cache keys of the keys and teams whose spend changed, so budgets are
//     checked against the new spend on every replica; rows that cost nothing touch nothing,
//     so free calls do not churn the cache. spend is written by RecordSpend only: Generate,
//     Update, CreateTeam and UpdateTeam set max_budget and leave spend as it is. Rows are
//     kept forever unless general_settings.maximum_spend_logs_retention_period is set:
//     then internal/spend's Retention calls DeleteSpendLogsBefore, one bounded DELETE (by
//     request_id from a LIMITed sub-select, which both backends read) at a time; the
//     daily_spend rollup and the keys' and teams' spend are kept. ParseDuration reads
//     LiteLLM's durations ("30s", "30m", "30h", "30d", "2w", "1mo").
//   - Budget periods (migration 00005): keys and teams keep budget_duration as given, the
//     same in milliseconds and budget_reset_at (unix ms). Generate, CreateTeam and an
//     update that changes the duration set the first reset one period after now (a
//     separate UPDATE in the same transaction, so the other writes stay as they were).
//     RecordSpend's spend update resets in SQL: when budget_reset_at is due at the write,
//     the batch's cost becomes the new period's spend and the reset moves one period past
//     the write, so no reader can see a stale period for a key with traffic. ResetBudgets
//     does the same for due rows without traffic (1 000 per transaction, cache keys
//     touched), and Budget.SpendAt lets admission treat a due reset as done.
//   - Tool pins (migrations/00007, internal/pinning): mcp_tool_pins holds per server and tool
//     the approved definition's digests and, while quarantined, why and what changed;
//     mcp_tool_pin_events is their audit trail. PutToolPins without overwrite is INSERT ... ON
//     CONFLICT DO NOTHING, so a first sighting never replaces what another replica or an
//     admin wrote. Pins are keyed by the server's name. Events are never deleted.
package store
